// Dense on NEON with FEAT_BF16: BFDOT on bf16 activation pairs (the bf16 math of dense.h, not
// exact; chosen only by name), 16-column panels. F32 weights get the exact NEON math.
// Compiled with -march=armv8.2-a+bf16.

#include "arm_neon_dense.h"

namespace dq4::dense {
namespace {

// x[k], x[k+1] rounded to bf16 as one dword, broadcast against 4 columns' weight pairs.
struct BfdotPairs {
  template <int MR, int NV, Prefetch kPrefetch>
  static DQ4_DENSE_INLINE void accumulate(const Lhs& lhs, int64_t m, const uint8_t* w,
                                          int64_t step_bytes, int64_t panel_bytes, int64_t k0,
                                          int64_t k1, float32x4_t (&acc)[MR][NV]) {
    const uint32_t* pairs[MR];
    for (int r = 0; r < MR; ++r) pairs[r] = lhs.pairs + (m + r) * lhs.ld_pairs;
    const int64_t end = (k1 + 1) / 2;
    for (int64_t s = k0 / 2; s < end; ++s, w += step_bytes) {
      prefetch_step<Neon, NV, kPrefetch>(w, panel_bytes);
      bfloat16x8_t a[MR];
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) a[r] = vreinterpretq_bf16_u32(vdupq_n_u32(pairs[r][s]));
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) {
        const bfloat16x8_t v = vreinterpretq_bf16_u32(
            vld1q_u32(reinterpret_cast<const uint32_t*>(vector_at<Neon>(w, panel_bytes, j))));
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) acc[r][j] = vbfdotq_f32(acc[r][j], v, a[r]);
      }
    }
  }
};

// Round to nearest, ties to even (x is finite).
uint32_t to_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
}

int64_t prepare(const Layout& l, int64_t m0, int64_t m1, const Lhs& lhs) {
  const int64_t bad = first_non_finite_row(l, m0, m1, lhs);
  if (bad >= 0 || l.element != Element::bf16) return bad;
  for (int64_t m = m0; m < m1; ++m) {
    const float* x = lhs.x + m * lhs.ldx;
    uint32_t* out = lhs.pairs + m * lhs.ld_pairs;
    for (int64_t i = 0; i < lhs.ld_pairs; ++i)
      out[i] = to_bf16(x[2 * i]) | (2 * i + 1 < l.k ? to_bf16(x[2 * i + 1]) << 16 : 0u);
  }
  return -1;
}

void run(const Layout& l, const uint8_t* packed, const Lhs& lhs, int64_t m0, int64_t m1, int64_t p0,
         int64_t p1, float* y, int64_t ldy, kernels::Epilogue e, float* partial) {
  if (l.element == Element::bf16)
    run_panels<Neon, BfdotPairs>(l, packed, lhs, m0, m1, p0, p1, y, ldy, e, partial);
  else
    run_panels<Neon, ExactF32<Neon>>(l, packed, lhs, m0, m1, p0, p1, y, ldy, e, partial);
}

bool supported(const CpuFeatures& f) { return f.neon && f.neon_bf16; }

}  // namespace

extern const Kernel kNeonBf16Kernel = {"neon_bf16", "bf16_bf16_f32_neonbf16_4x16",
                                       "neon+bf16", Neon::kNr,
                                       false,       true,
                                       supported,   prepare,
                                       run};

}  // namespace dq4::dense
