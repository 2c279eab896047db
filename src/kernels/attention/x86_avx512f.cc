// Attention on AVX-512F: attention.h's 16 lanes as one zmm register, dot products of 16 keys at
// once; their tree reductions finish on 256-bit halves (x86_reduce.h, shared with AVX2).
// Compiled with -mavx2 -mfma -mavx512f.

#include <immintrin.h>

#include "simd_tile.h"
#include "x86_reduce.h"

namespace dq4::attention {
namespace {

struct Zmm {
  using F = __m512;
  static constexpr int kValueHeads = 4;
  static constexpr int kKeys = 16;

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
  static DQ4_ATTENTION_INLINE void reduce_keys(const F (&acc)[kKeys], float scale, float* out) {
    __m256 t8[2][8];
    for (int b = 0; b < kKeys; ++b) {
      const __m256 high = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[b]), 1));
      t8[b / 8][b % 8] = _mm256_add_ps(_mm512_castps512_ps256(acc[b]), high);
    }
    reduce_t8(t8[0], scale, out);
    reduce_t8(t8[1], scale, out + 8);
  }
};

bool supported(const CpuFeatures& f) { return f.avx2 && f.fma && f.avx512f; }

}  // namespace

extern const Kernel kAvx512fKernel = {"avx512f", "f32_f32bf16kv_f32_avx512f_4rows",
                                      "avx2+fma+avx512f", supported, run_simd<Zmm>};

}  // namespace dq4::attention
