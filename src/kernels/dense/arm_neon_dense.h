#pragma once
// 128-bit NEON vector operations for the panel driver, shared by the NEON and NEON-BF16 variants
// (each includes this header in its own translation unit, compiled with its own -march flags).
// Panels are 16 columns (4 q registers per step).

#include <arm_neon.h>

#include <cstring>

#include "panel_driver.h"

namespace dq4::dense {
namespace {

struct Neon {
  using Reg = float32x4_t;
  static constexpr int kLanes = 4;
  static constexpr int kBytes = 16;
  static constexpr int kNr = 16;
  // 16 accumulators, 8 broadcasts and the widened weights fit the 32 registers.
  static constexpr int kDecodeRows = 4, kDecodeVectors = 4;
  static constexpr int kStreamRows = 4, kStreamVectors = 4;  // taller decode tiles unmeasured here
  static constexpr int kBatchRows = 4;
  static constexpr int kPrefillRows = 4, kPrefillVectors = 4;

  static DQ4_DENSE_INLINE Reg zero() { return vdupq_n_f32(0.0f); }
  static DQ4_DENSE_INLINE Reg set1(float v) { return vdupq_n_f32(v); }
  static DQ4_DENSE_INLINE Reg load(const float* p) { return vld1q_f32(p); }
  static DQ4_DENSE_INLINE void store(float* p, Reg v) { vst1q_f32(p, v); }
  static DQ4_DENSE_INLINE Reg load_n(const float* p, int n) {
    float lanes[4] = {};
    std::memcpy(lanes, p, static_cast<size_t>(n) * 4);
    return vld1q_f32(lanes);
  }
  static DQ4_DENSE_INLINE void store_n(float* p, Reg v, int n) {
    float lanes[4];
    vst1q_f32(lanes, v);
    std::memcpy(p, lanes, static_cast<size_t>(n) * 4);
  }
  static DQ4_DENSE_INLINE Reg fma(Reg a, Reg b, Reg c) { return vfmaq_f32(c, a, b); }
  static DQ4_DENSE_INLINE Reg add(Reg a, Reg b) { return vaddq_f32(a, b); }
  // FMAX/FMIN treat signed zeros and NaN differently from (y > lo ? y : lo): compare and select.
  static DQ4_DENSE_INLINE Reg clamp(Reg y, Reg lo, Reg hi) {
    y = vbslq_f32(vcgtq_f32(y, lo), y, lo);
    return vbslq_f32(vcltq_f32(y, hi), y, hi);
  }
  static DQ4_DENSE_INLINE Reg raw(const uint8_t* p) {
    return vreinterpretq_f32_u32(vld1q_u32(reinterpret_cast<const uint32_t*>(p)));
  }
  static DQ4_DENSE_INLINE Reg bf16_even(Reg raw) {
    return vreinterpretq_f32_u32(vshlq_n_u32(vreinterpretq_u32_f32(raw), 16));
  }
  static DQ4_DENSE_INLINE Reg bf16_odd(Reg raw) {
    return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(raw), vdupq_n_u32(0xffff0000u)));
  }
  static DQ4_DENSE_INLINE void prefetch(const uint8_t* p) { __builtin_prefetch(p); }
  static DQ4_DENSE_INLINE void prefetch_l2(const uint8_t* p) { __builtin_prefetch(p, 0, 2); }
};

}  // namespace
}  // namespace dq4::dense
