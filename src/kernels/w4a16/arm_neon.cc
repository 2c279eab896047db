// W4A16 on NEON (Armv8.0 Advanced SIMD): 16-column panels, 4 quads of 4 columns per step of 8 k.
// The step's words are XORed with 0x88888888 once, which turns each nibble u = q + 8 into q as a
// signed 4-bit value; SHL to the top of the word, SSHR by 28 and SCVTF then give float(q) of 4
// columns, and FMLA fuses exactly like fmaf.

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "tile.h"

namespace dq4::w4a16 {
namespace {

// Decode streams weights from DRAM once: prefetch ahead (one line per step of 16 columns).
constexpr int kPrefetchBytes = 2048;

struct Neon {
  using F = float32x4_t;
  using I = int32x4_t;
  static constexpr int kLanes = 4;
  static constexpr int kNr = 16;
  // Prefill tiles: 6 rows x 16 columns (24 accumulators of the 32 registers).
  static constexpr int kPrefillRows = 6;
  static constexpr int kPrefillVectors = 4;
  // Panels per decode tile: 8+ independent accumulators hide the FMLA latency.
  static constexpr int decode_panels(int rows) { return rows <= 2 ? 2 : 1; }

  static DQ4_ALWAYS_INLINE void prefetch(const uint8_t* p) {
    if ((reinterpret_cast<uintptr_t>(p) & 63) == 0) __builtin_prefetch(p + kPrefetchBytes);
  }
  static DQ4_ALWAYS_INLINE I load_step(const uint8_t* p) {
    return veorq_s32(vreinterpretq_s32_u8(vld1q_u8(p)),
                     vdupq_n_s32(static_cast<int32_t>(0x88888888u)));
  }
  template <int i>
  static DQ4_ALWAYS_INLINE F dequant(I raw) {
    return vcvtq_f32_s32(vshrq_n_s32(vshlq_n_s32(raw, 28 - nibble_shift(i)), 28));
  }
  static DQ4_ALWAYS_INLINE F zero() { return vdupq_n_f32(0.0f); }
  static DQ4_ALWAYS_INLINE F set1(float v) { return vdupq_n_f32(v); }
  static DQ4_ALWAYS_INLINE F broadcast(const float* p) { return vld1q_dup_f32(p); }
  static DQ4_ALWAYS_INLINE F load(const float* p) { return vld1q_f32(p); }
  static DQ4_ALWAYS_INLINE F loadu(const float* p) { return vld1q_f32(p); }
  static DQ4_ALWAYS_INLINE F load_bf16(const uint16_t* p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
  }
  static DQ4_ALWAYS_INLINE void store(float* p, F v) { vst1q_f32(p, v); }
  static DQ4_ALWAYS_INLINE F fma(F a, F b, F c) { return vfmaq_f32(c, a, b); }
  static DQ4_ALWAYS_INLINE F add(F a, F b) { return vaddq_f32(a, b); }
  // (y > lo ? y : lo), then (y < hi ? y : hi), NaN included (FMAX/FMIN would propagate it).
  static DQ4_ALWAYS_INLINE F clamp(F y, F lo, F hi) {
    y = vbslq_f32(vcgtq_f32(y, lo), y, lo);
    return vbslq_f32(vcltq_f32(y, hi), y, hi);
  }
  static DQ4_ALWAYS_INLINE void store_columns(float* dst, F v, int64_t valid) {
    if (valid >= kLanes) {
      vst1q_f32(dst, v);
    } else {
      float lanes[kLanes];
      vst1q_f32(lanes, v);
      std::memcpy(dst, lanes, static_cast<size_t>(valid) * sizeof(float));
    }
  }
};

bool supported(const CpuFeatures& f) { return f.neon; }

}  // namespace

extern const Kernel kNeonKernel = {"neon",   "f32_qsi4_f32_neon_6x16", "neon", Neon::kNr, supported,
                                   run<Neon>};

}  // namespace dq4::w4a16
