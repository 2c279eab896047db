#pragma once
// The end of attention.h's tree reduction for 4 or 8 dot products at once on 256-bit registers
// (AVX2 and AVX-512 both use it): from each key's t8 (lanes l < 8: s[l] + s[l + 8]) to its
// result, each add pairing exactly the lanes the scalar tree pairs. Included by translation
// units compiled with -mavx2.

#include <immintrin.h>

#include "kernel.h"

namespace dq4::attention {
namespace {

// Two keys' t4 (key a in the low 128 bits, key b in the high): t8[l] + t8[l + 4].
DQ4_ATTENTION_INLINE __m256 t4_pair(__m256 a, __m256 b) {
  return _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
}

// Per 128-bit half: [t2[0], t2[1]] of the key in c's half, then of the key in d's half
// (t4[l] + t4[l + 2]).
DQ4_ATTENTION_INLINE __m256 t2_pair(__m256 c, __m256 d) {
  return _mm256_add_ps(_mm256_shuffle_ps(c, d, 0x44), _mm256_shuffle_ps(c, d, 0xee));
}

// Per 128-bit half: t2[0] + t2[1] of the keys in lanes (0, 1), (2, 3) of e, then of f.
DQ4_ATTENTION_INLINE __m256 t1_pair(__m256 e, __m256 f) {
  return _mm256_add_ps(_mm256_shuffle_ps(e, f, 0x88), _mm256_shuffle_ps(e, f, 0xdd));
}

// out[k] = (the dot product whose t8 is t8[k]) * scale, k < N (N = 4 or 8).
template <int N>
DQ4_ATTENTION_INLINE void reduce_t8(const __m256 (&t8)[N], float scale, float* out) {
  static_assert(N == 4 || N == 8);
  const __m256 c0 = t4_pair(t8[0], t8[1]), c1 = t4_pair(t8[2], t8[3]);
  const __m256 d0 = t2_pair(c0, c1);  // low: keys 0, 2; high: keys 1, 3
  if constexpr (N == 4) {
    const __m256 e = t1_pair(d0, d0);  // low: 0 2 0 2; high: 1 3 1 3
    const __m128 dots = _mm_unpacklo_ps(_mm256_castps256_ps128(e), _mm256_extractf128_ps(e, 1));
    _mm_storeu_ps(out, _mm_mul_ps(dots, _mm_set1_ps(scale)));
  } else {
    const __m256 c2 = t4_pair(t8[4], t8[5]), c3 = t4_pair(t8[6], t8[7]);
    const __m256 d1 = t2_pair(c2, c3);  // low: keys 4, 6; high: keys 5, 7
    const __m256 e = t1_pair(d0, d1);   // low: 0 2 4 6; high: 1 3 5 7
    const __m256 dots = _mm256_permutevar8x32_ps(e, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_ps(out, _mm256_mul_ps(dots, _mm256_set1_ps(scale)));
  }
}

}  // namespace
}  // namespace dq4::attention
