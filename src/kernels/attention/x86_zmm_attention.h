#pragma once
// attention.h's 16 lanes as one zmm register for the AVX-512F attention variants: dot products of
// 16 keys at once, their tree reductions done together on whole registers. Included only by files
// compiled with -mavx2 -mfma -mavx512f; internal linkage, like simd_tile.h.

#include <immintrin.h>

#include "simd_tile.h"

namespace dq4::attention {
namespace {

struct Zmm {
  using F = __m512;
  static constexpr int kValueHeads = 4;
  static constexpr int kKeys = 16;
  static constexpr int kPrefetchLocality = 3;

  static DQ4_ATTENTION_INLINE F zero() { return _mm512_setzero_ps(); }
  static DQ4_ATTENTION_INLINE F set1(float v) { return _mm512_set1_ps(v); }
  static DQ4_ATTENTION_INLINE F load(const float* p) { return _mm512_loadu_ps(p); }
  static DQ4_ATTENTION_INLINE F load(const uint16_t* p) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
  static DQ4_ATTENTION_INLINE void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static DQ4_ATTENTION_INLINE F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static DQ4_ATTENTION_INLINE F add(F a, F b) { return _mm512_add_ps(a, b); }
  static DQ4_ATTENTION_INLINE F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static DQ4_ATTENTION_INLINE F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static DQ4_ATTENTION_INLINE F max(F a, F b) { return _mm512_max_ps(a, b); }
  static DQ4_ATTENTION_INLINE F round(F a) {
    return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static DQ4_ATTENTION_INLINE F pow2(F n) {
    const __m512i biased = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(biased, 23));
  }
  static DQ4_ATTENTION_INLINE F zero_below(F x, F limit, F y) {
    return _mm512_maskz_mov_ps(static_cast<__mmask16>(~_mm512_cmp_ps_mask(x, limit, _CMP_LT_OQ)),
                               y);
  }
  // The 16 keys' trees at once, on whole zmm registers: each step adds the lanes the scalar tree
  // pairs, for several keys per add (31 shuffles and 15 adds for 16 keys).
  static DQ4_ATTENTION_INLINE void reduce_keys(const F (&acc)[kKeys], float scale, float* out) {
    F t8[8];  // keys 2p, 2p + 1: their t8 in the low and high 256 bits
#pragma GCC unroll 8
    for (int p = 0; p < 8; ++p)
      t8[p] = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2 * p], acc[2 * p + 1], 0x44),
                            _mm512_shuffle_f32x4(acc[2 * p], acc[2 * p + 1], 0xee));
    F t4[4];  // keys 4p .. 4p + 3: their t4 in 128-bit quarters 0 .. 3
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p)
      t4[p] = _mm512_add_ps(_mm512_shuffle_f32x4(t8[2 * p], t8[2 * p + 1], 0x88),
                            _mm512_shuffle_f32x4(t8[2 * p], t8[2 * p + 1], 0xdd));
    F t2[2];  // quarter i: t2 of keys 8p + i, then of 8p + 4 + i
#pragma GCC unroll 2
    for (int p = 0; p < 2; ++p)
      t2[p] = _mm512_add_ps(_mm512_shuffle_ps(t4[2 * p], t4[2 * p + 1], 0x44),
                            _mm512_shuffle_ps(t4[2 * p], t4[2 * p + 1], 0xee));
    // Quarter i: keys i, 4 + i, 8 + i, 12 + i.
    const F dots =
        _mm512_add_ps(_mm512_shuffle_ps(t2[0], t2[1], 0x88), _mm512_shuffle_ps(t2[0], t2[1], 0xdd));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_permutexvar_ps(order, dots), _mm512_set1_ps(scale)));
  }
};

inline bool avx512f_supported(const CpuFeatures& f) { return f.avx2 && f.fma && f.avx512f; }

}  // namespace
}  // namespace dq4::attention
