#pragma once
// Integer sums with SDOT (FEAT_DotProd), shared by neon_dotprod and by neon_i8mm's one-row path.
// The nibble planes hold u in 0..15, valid signed int8, so SDOT takes them directly: one
// vdotq_laneq_s32 multiplies 4 columns x 4 k of a plane by 4 activations picked by lane.
// Needs -march=...+dotprod.

#include "arm_neon_w4a8.h"

namespace dq4::w4a8 {
namespace {
namespace arm {

struct SdotSums {
  // One step of 8 k: activations k..k+3 / k+4..k+7 are lanes L / L+1 of a[r] (16 k per load).
  // With one row the two planes go to separate accumulators to halve the dependency chains.
  template <int L, int MR, bool kSplit>
  static DQ4_ALWAYS_INLINE void step(const uint8_t* w, const int8x16_t (&a)[MR],
                                     int32x4_t (&acc)[MR][kQuads], int32x4_t (&acc_hi)[kQuads]) {
    const uint8x16_t low_mask = vdupq_n_u8(0x0f);
    for (int j = 0; j < kQuads; ++j) {
      const uint8x16_t raw = vld1q_u8(w + 16 * j);
      const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(raw, low_mask));
      const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(raw, 4));
      for (int r = 0; r < MR; ++r) {
        acc[r][j] = vdotq_laneq_s32(acc[r][j], lo, a[r], L);
        if constexpr (kSplit)
          acc_hi[j] = vdotq_laneq_s32(acc_hi[j], hi, a[r], L + 1);
        else
          acc[r][j] = vdotq_laneq_s32(acc[r][j], hi, a[r], L + 1);
      }
    }
  }

  template <int MR>
  static void sums(const uint8_t* w, int64_t steps, const int8_t* const* q, int64_t k0,
                   int32x4_t (&acc)[MR][kQuads]) {
    constexpr bool kSplit = MR == 1;
    int32x4_t acc_hi[kQuads];
    for (int j = 0; j < kQuads; ++j) acc_hi[j] = vdupq_n_s32(0);
    constexpr int64_t kStepBytes = kNr * 4;
    for (int64_t s = 0; s < steps; s += 2, w += 2 * kStepBytes) {
      int8x16_t a[MR];
      for (int r = 0; r < MR; ++r) a[r] = vld1q_s8(q[r] + k0 + s * 8);
      step<0, MR, kSplit>(w, a, acc, acc_hi);
      step<2, MR, kSplit>(w + kStepBytes, a, acc, acc_hi);
    }
    if constexpr (kSplit)
      for (int j = 0; j < kQuads; ++j) acc[0][j] = vaddq_s32(acc[0][j], acc_hi[j]);
  }
};

}  // namespace arm
}  // namespace
}  // namespace dq4::w4a8
