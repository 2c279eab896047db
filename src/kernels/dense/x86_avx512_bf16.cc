// Dense on AVX512-BF16: VDPBF16PS on bf16 activation pairs (the bf16 math of dense.h, not exact;
// chosen only by name), 64-column panels. F32 weights get the exact AVX512F math.
// Compiled with -mavx2 -mfma -mavx512f -mavx512bf16.

#include "x86_zmm_dense.h"

namespace dq4::dense {
namespace {

// x[k], x[k+1] rounded to bf16 as one dword, broadcast against 16 columns' weight pairs.
struct DotBf16 {
  template <int MR, int NV, Prefetch kPrefetch>
  static DQ4_DENSE_INLINE void accumulate(const Lhs& lhs, int64_t m, const uint8_t* w,
                                          int64_t step_bytes, int64_t panel_bytes, int64_t k0,
                                          int64_t k1, __m512 (&acc)[MR][NV]) {
    const uint32_t* pairs[MR];
    for (int r = 0; r < MR; ++r) pairs[r] = lhs.pairs + (m + r) * lhs.ld_pairs;
    const int64_t end = (k1 + 1) / 2;
    for (int64_t s = k0 / 2; s < end; ++s, w += step_bytes) {
      prefetch_step<Zmm, NV, kPrefetch>(w, panel_bytes);
      __m512bh a[MR];
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r)
        a[r] = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(pairs[r][s])));
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) {
        const __m512bh v =
            reinterpret_cast<__m512bh>(_mm512_load_si512(vector_at<Zmm>(w, panel_bytes, j)));
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], v, a[r]);
      }
    }
  }
};

__mmask16 tail_mask(int64_t remaining) {
  if (remaining <= 0) return 0;
  return remaining >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << remaining) - 1);
}

int64_t prepare(const Layout& l, int64_t m0, int64_t m1, const Lhs& lhs) {
  const int64_t bad = first_non_finite_row(l, m0, m1, lhs);
  if (bad >= 0 || l.element != Element::bf16) return bad;
  for (int64_t m = m0; m < m1; ++m) {
    const float* x = lhs.x + m * lhs.ldx;
    uint32_t* out = lhs.pairs + m * lhs.ld_pairs;
    for (int64_t k = 0; k < l.k; k += 32) {
      const __m512 lo = _mm512_maskz_loadu_ps(tail_mask(l.k - k), x + k);
      const __m512 hi = _mm512_maskz_loadu_ps(tail_mask(l.k - k - 16), x + k + 16);
      // 32 consecutive bf16 values, x[k] in the low half of dword 0: 16 pairs.
      const __m512i packed = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
      _mm512_mask_storeu_epi32(out + k / 2, tail_mask(lhs.ld_pairs - k / 2), packed);
    }
  }
  return -1;
}

void run(const Layout& l, const uint8_t* packed, const Lhs& lhs, int64_t m0, int64_t m1, int64_t p0,
         int64_t p1, float* y, int64_t ldy, kernels::Epilogue e, float* partial) {
  if (l.element == Element::bf16)
    run_panels<Zmm, DotBf16>(l, packed, lhs, m0, m1, p0, p1, y, ldy, e, partial);
  else
    run_panels<Zmm, ExactF32<Zmm>>(l, packed, lhs, m0, m1, p0, p1, y, ldy, e, partial);
}

bool supported(const CpuFeatures& f) { return f.avx512f && f.avx512_bf16; }

}  // namespace

extern const Kernel kAvx512Bf16Kernel = {"avx512_bf16",
                                         "bf16_bf16_f32_avx512bf16_4x64",
                                         "avx512f+avx512_bf16",
                                         Zmm::kNr,
                                         false,
                                         true,
                                         supported,
                                         prepare,
                                         run};

}  // namespace dq4::dense
