// W4A8 on NEON with FEAT_I8MM, 16-column panels. SMMLA multiplies a 2x8 int8 block of two
// activation rows by a 2x8 block of two weight columns (8 k each) into a 2x2 int32 tile. A step's
// column c holds u(k..k+3) in its low and u(k+4..k+7) in its high nibbles, so zipping the two
// nibble planes by 32-bit lanes gives each column's 8 consecutive k: ZIP1 -> columns 0,1,
// ZIP2 -> columns 2,3. Rows go in pairs (an odd last row is paired with zeros); a single row
// takes the SDOT path instead, where SMMLA would waste half its work.
// Compiled with -march=armv8.2-a+dotprod+i8mm.

#include "arm_neon_sdot.h"

namespace dq4::w4a8 {
namespace {

struct SmmlaSums {
  template <int MR>
  static void sums(const uint8_t* w, int64_t steps, const int8_t* const* q, int64_t k0,
                   int32x4_t (&acc)[MR][arm::kQuads]) {
    if constexpr (MR == 1) {
      arm::SdotSums::sums<1>(w, steps, q, k0, acc);
    } else {
      constexpr int kPairs = (MR + 1) / 2;
      constexpr int kColumnPairs = arm::kNr / 2;
      constexpr int64_t kStepBytes = arm::kNr * 4;
      const uint8x16_t low_mask = vdupq_n_u8(0x0f);
      int32x4_t mm[kPairs][kColumnPairs];  // (r0 c0, r0 c1, r1 c0, r1 c1) of each pair x pair
      for (int p = 0; p < kPairs; ++p)
        for (int c = 0; c < kColumnPairs; ++c) mm[p][c] = vdupq_n_s32(0);
      for (int64_t s = 0; s < steps; ++s, w += kStepBytes) {
        const int64_t k = k0 + s * 8;
        int8x16_t a[kPairs];
        for (int p = 0; p < kPairs; ++p) {
          const int8x8_t second = 2 * p + 1 < MR ? vld1_s8(q[2 * p + 1] + k) : vdup_n_s8(0);
          a[p] = vcombine_s8(vld1_s8(q[2 * p] + k), second);
        }
        int8x16_t b[kColumnPairs];
        for (int j = 0; j < arm::kQuads; ++j) {
          const uint8x16_t raw = vld1q_u8(w + 16 * j);
          const uint32x4_t lo = vreinterpretq_u32_u8(vandq_u8(raw, low_mask));
          const uint32x4_t hi = vreinterpretq_u32_u8(vshrq_n_u8(raw, 4));
          b[2 * j] = vreinterpretq_s8_u32(vzip1q_u32(lo, hi));
          b[2 * j + 1] = vreinterpretq_s8_u32(vzip2q_u32(lo, hi));
        }
        for (int p = 0; p < kPairs; ++p)
          for (int c = 0; c < kColumnPairs; ++c) mm[p][c] = vmmlaq_s32(mm[p][c], a[p], b[c]);
      }
      // Back to one int32x4 of 4 columns per row: 64-bit zips of two adjacent column pairs.
      for (int p = 0; p < kPairs; ++p)
        for (int j = 0; j < arm::kQuads; ++j) {
          const int64x2_t c01 = vreinterpretq_s64_s32(mm[p][2 * j]);
          const int64x2_t c23 = vreinterpretq_s64_s32(mm[p][2 * j + 1]);
          acc[2 * p][j] = vaddq_s32(acc[2 * p][j], vreinterpretq_s32_s64(vzip1q_s64(c01, c23)));
          if (2 * p + 1 < MR)
            acc[2 * p + 1][j] =
                vaddq_s32(acc[2 * p + 1][j], vreinterpretq_s32_s64(vzip2q_s64(c01, c23)));
        }
    }
  }
};

bool supported(const CpuFeatures& f) { return f.neon && f.neon_dotprod && f.neon_i8mm; }

}  // namespace

extern const Kernel kNeonI8mmKernel = {"neon_i8mm",         "qai8dx_qsi4_f32_neoni8mm_4x16",
                                       "neon+dotprod+i8mm", arm::kNr,
                                       supported,           arm::quantize,
                                       arm::run<SmmlaSums>};

}  // namespace dq4::w4a8
