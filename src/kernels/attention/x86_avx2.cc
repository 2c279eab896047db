// Attention on AVX2 + FMA: attention.h's 16 lanes as two ymm registers, dot products of 4 keys
// at once (8 accumulators of the 16 registers). Compiled with -mavx2 -mfma.

#include <immintrin.h>

#include "simd_tile.h"

namespace dq4::attention {
namespace {

struct Ymm2 {
  struct F {
    __m256 lo, hi;  // lanes 0-7, 8-15
  };
  static constexpr int kValueHeads = 1;
  static constexpr int kKeys = 4;
  static constexpr int kPrefetchLocality = 3;

  static DQ4_ATTENTION_INLINE F zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static DQ4_ATTENTION_INLINE F set1(float v) { return {_mm256_set1_ps(v), _mm256_set1_ps(v)}; }
  static DQ4_ATTENTION_INLINE F load(const float* p) {
    return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
  }
  static DQ4_ATTENTION_INLINE __m256 widen(const uint16_t* p) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  }
  static DQ4_ATTENTION_INLINE F load(const uint16_t* p) { return {widen(p), widen(p + 8)}; }
  static DQ4_ATTENTION_INLINE void store(float* p, F v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
  }
  static DQ4_ATTENTION_INLINE F fma(F a, F b, F c) {
    return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
  }
  static DQ4_ATTENTION_INLINE F add(F a, F b) {
    return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)};
  }
  static DQ4_ATTENTION_INLINE F sub(F a, F b) {
    return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)};
  }
  static DQ4_ATTENTION_INLINE F mul(F a, F b) {
    return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)};
  }
  static DQ4_ATTENTION_INLINE F max(F a, F b) {
    return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)};
  }
  static DQ4_ATTENTION_INLINE F round(F a) {
    constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    return {_mm256_round_ps(a.lo, kNearest), _mm256_round_ps(a.hi, kNearest)};
  }
  static DQ4_ATTENTION_INLINE __m256 pow2(__m256 n) {
    const __m256i biased = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(biased, 23));
  }
  static DQ4_ATTENTION_INLINE F pow2(F n) { return {pow2(n.lo), pow2(n.hi)}; }
  static DQ4_ATTENTION_INLINE F zero_below(F x, F limit, F y) {
    return {_mm256_andnot_ps(_mm256_cmp_ps(x.lo, limit.lo, _CMP_LT_OQ), y.lo),
            _mm256_andnot_ps(_mm256_cmp_ps(x.hi, limit.hi, _CMP_LT_OQ), y.hi)};
  }
  static DQ4_ATTENTION_INLINE void reduce_keys(const F (&acc)[kKeys], float scale, float* out) {
    __m256 t8[kKeys];
    for (int b = 0; b < kKeys; ++b) t8[b] = _mm256_add_ps(acc[b].lo, acc[b].hi);
    // Each add pairs exactly the lanes the scalar tree pairs. Keys 0 and 1: t4 in the low and
    // high 128 bits of c0 (keys 2 and 3 in c1).
    const __m256 c0 = t4_pair(t8[0], t8[1]), c1 = t4_pair(t8[2], t8[3]);
    // Per 128-bit half: t2 of keys 0, 2 (low), 1, 3 (high).
    const __m256 d =
        _mm256_add_ps(_mm256_shuffle_ps(c0, c1, 0x44), _mm256_shuffle_ps(c0, c1, 0xee));
    // Low: keys 0 2 0 2, high: 1 3 1 3.
    const __m256 e = _mm256_add_ps(_mm256_shuffle_ps(d, d, 0x88), _mm256_shuffle_ps(d, d, 0xdd));
    const __m128 dots = _mm_unpacklo_ps(_mm256_castps256_ps128(e), _mm256_extractf128_ps(e, 1));
    _mm_storeu_ps(out, _mm_mul_ps(dots, _mm_set1_ps(scale)));
  }

 private:
  // Two keys' t8: t8[l] + t8[l + 4] of key a in the low 128 bits, of key b in the high.
  static DQ4_ATTENTION_INLINE __m256 t4_pair(__m256 a, __m256 b) {
    return _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
  }
};

bool supported(const CpuFeatures& f) { return f.avx2 && f.fma; }

}  // namespace

extern const Kernel kAvx2Kernel = {"avx2", "f32_f32bf16kv_f32_avx2_8rows", "avx2+fma", supported,
                                   run_simd<Ymm2>};

}  // namespace dq4::attention
