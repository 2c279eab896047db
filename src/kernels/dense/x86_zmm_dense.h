#pragma once
// 512-bit vector operations for the panel driver, shared by the AVX512F and AVX512-BF16 variants
// (each includes this header in its own translation unit, compiled with its own -m flags).
// Panels are 64 columns (4 zmm per step).

#include <immintrin.h>

#include "panel_driver.h"

namespace dq4::dense {
namespace {

struct Zmm {
  using Reg = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kBytes = 64;
  static constexpr int kNr = 64;
  // Decode: up to 20 accumulators over the whole panel (five rows: a draft of four verified with
  // its last token), then 16 over half of it for up to eight rows; broadcasts row by row where
  // every row's would not fit the 32 registers (panel_driver.h).
  static constexpr int kDecodeRows = 5, kDecodeVectors = 4;
  static constexpr int kStreamRows = 8, kStreamVectors = 2;
  static constexpr int kBatchRows = 16;
  static constexpr int kPrefillRows = 4, kPrefillVectors = 4;

  static DQ4_DENSE_INLINE __mmask16 mask(int n) { return static_cast<__mmask16>((1u << n) - 1); }
  static DQ4_DENSE_INLINE Reg zero() { return _mm512_setzero_ps(); }
  static DQ4_DENSE_INLINE Reg set1(float v) { return _mm512_set1_ps(v); }
  static DQ4_DENSE_INLINE Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static DQ4_DENSE_INLINE void store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static DQ4_DENSE_INLINE Reg load_n(const float* p, int n) {
    return _mm512_maskz_loadu_ps(mask(n), p);
  }
  static DQ4_DENSE_INLINE void store_n(float* p, Reg v, int n) {
    _mm512_mask_storeu_ps(p, mask(n), v);
  }
  static DQ4_DENSE_INLINE Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static DQ4_DENSE_INLINE Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  // MAXPS/MINPS return the second operand unless the first compares greater/less.
  static DQ4_DENSE_INLINE Reg clamp(Reg y, Reg lo, Reg hi) {
    return _mm512_min_ps(_mm512_max_ps(y, lo), hi);
  }
  static DQ4_DENSE_INLINE Reg raw(const uint8_t* p) { return _mm512_load_ps(p); }
  static DQ4_DENSE_INLINE Reg bf16_even(Reg raw) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(raw), 16));
  }
  static DQ4_DENSE_INLINE Reg bf16_odd(Reg raw) {
    return _mm512_castsi512_ps(_mm512_and_si512(
        _mm512_castps_si512(raw), _mm512_set1_epi32(static_cast<int32_t>(0xffff0000u))));
  }
  static DQ4_DENSE_INLINE void prefetch(const uint8_t* p) {
    _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
  }
  static DQ4_DENSE_INLINE void prefetch_l2(const uint8_t* p) {
    _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1);
  }
};

}  // namespace
}  // namespace dq4::dense
