// W4A8 on plain NEON (Armv8.0 Advanced SIMD, no dot product), 16-column panels.
// SMULL/SMLAL on the nibble planes (u in 0..15, valid signed int8) times a broadcast dword of
// 4 activations: |u a| <= 1920, so one 32-k block (8 products per int16 lane) stays below 15360
// and a pairwise add below 30720, all within int16; SADALP then widens into int32 once per block.
// The lane order [c0 k01, c0 k23, c1 k01, ...] after ADDP folds into one int32 per column.

#include "arm_neon_w4a8.h"

namespace dq4::w4a8 {
namespace {

struct NeonSums {
  static DQ4_ALWAYS_INLINE int8x16_t broadcast_dword(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return vreinterpretq_s8_s32(vdupq_n_s32(v));
  }

  // One row over all steps, its 4 accumulators in registers. Rows are done one after another,
  // re-reading the group's weights from L1: several rows' int16 partial sums and broadcast
  // activations at once would not fit the 32 vector registers (GCC spilled them to the stack),
  // and the extra unpack ops run beside the SMLALs, which bound this kernel anyway.
  static DQ4_ALWAYS_INLINE void row_sums(const uint8_t* w, int64_t steps, const int8_t* a,
                                         int32x4_t (&acc)[arm::kQuads]) {
    constexpr int64_t kStepBytes = arm::kNr * 4;
    const uint8x16_t low_mask = vdupq_n_u8(0x0f);
    int32x4_t sum[arm::kQuads];
    for (int j = 0; j < arm::kQuads; ++j) sum[j] = acc[j];
    for (int64_t s = 0; s < steps; s += 4, w += 4 * kStepBytes, a += 32) {
      int8x16_t a_lo[4], a_hi[4];
      for (int t = 0; t < 4; ++t) {
        a_lo[t] = broadcast_dword(a + 8 * t);
        a_hi[t] = broadcast_dword(a + 8 * t + 4);
      }
      for (int j = 0; j < arm::kQuads; ++j) {
        int16x8_t p01 = vdupq_n_s16(0), p23 = vdupq_n_s16(0);  // columns 4j..4j+1, 4j+2..4j+3
        for (int t = 0; t < 4; ++t) {
          const uint8x16_t raw = vld1q_u8(w + t * kStepBytes + 16 * j);
          const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(raw, low_mask));
          const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(raw, 4));
          p01 = vmlal_s8(p01, vget_low_s8(lo), vget_low_s8(a_lo[t]));
          p01 = vmlal_s8(p01, vget_low_s8(hi), vget_low_s8(a_hi[t]));
          p23 = vmlal_high_s8(p23, lo, a_lo[t]);
          p23 = vmlal_high_s8(p23, hi, a_hi[t]);
        }
        sum[j] = vpadalq_s16(sum[j], vpaddq_s16(p01, p23));
      }
    }
    for (int j = 0; j < arm::kQuads; ++j) acc[j] = sum[j];
  }

  template <int MR>
  static void sums(const uint8_t* w, int64_t steps, const int8_t* const* q, int64_t k0,
                   int32x4_t (&acc)[MR][arm::kQuads]) {
    for (int r = 0; r < MR; ++r) row_sums(w, steps, q[r] + k0, acc[r]);
  }
};

bool supported(const CpuFeatures& f) { return f.neon; }

}  // namespace

extern const Kernel kNeonKernel = {
    "neon",        "qai8dx_qsi4_f32_neon_4x16", "neon", arm::kNr, supported,
    arm::quantize, arm::run<NeonSums>};

}  // namespace dq4::w4a8
