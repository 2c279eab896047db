// Dense on AVX2 + FMA: the exact math (dense.h), 32-column panels (4 ymm per step), one FMA
// chain per output lane. Compiled with -mavx2 -mfma.

#include <immintrin.h>

#include "panel_driver.h"

namespace dq4::dense {
namespace {

struct Ymm {
  using Reg = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kBytes = 32;
  static constexpr int kNr = 32;
  // 8 accumulators, 4 broadcasts and the widened weights fit the 16 registers.
  static constexpr int kDecodeRows = 2, kDecodeVectors = 4;
  static constexpr int kStreamRows = 2, kStreamVectors = 4;  // no registers for taller tiles
  static constexpr int kBatchRows = 2;
  static constexpr int kPrefillRows = 2, kPrefillVectors = 4;

  static DQ4_DENSE_INLINE __m256i mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static DQ4_DENSE_INLINE Reg zero() { return _mm256_setzero_ps(); }
  static DQ4_DENSE_INLINE Reg set1(float v) { return _mm256_set1_ps(v); }
  static DQ4_DENSE_INLINE Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static DQ4_DENSE_INLINE void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  static DQ4_DENSE_INLINE Reg load_n(const float* p, int n) {
    return _mm256_maskload_ps(p, mask(n));
  }
  static DQ4_DENSE_INLINE void store_n(float* p, Reg v, int n) {
    _mm256_maskstore_ps(p, mask(n), v);
  }
  static DQ4_DENSE_INLINE Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static DQ4_DENSE_INLINE Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  // MAXPS/MINPS return the second operand unless the first compares greater/less.
  static DQ4_DENSE_INLINE Reg clamp(Reg y, Reg lo, Reg hi) {
    return _mm256_min_ps(_mm256_max_ps(y, lo), hi);
  }
  static DQ4_DENSE_INLINE Reg raw(const uint8_t* p) {
    return _mm256_load_ps(reinterpret_cast<const float*>(p));
  }
  static DQ4_DENSE_INLINE Reg bf16_even(Reg raw) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(raw), 16));
  }
  static DQ4_DENSE_INLINE Reg bf16_odd(Reg raw) {
    return _mm256_and_ps(raw,
                         _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int32_t>(0xffff0000u))));
  }
  static DQ4_DENSE_INLINE void prefetch(const uint8_t* p) {
    _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
  }
  static DQ4_DENSE_INLINE void prefetch_l2(const uint8_t* p) {
    _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1);
  }
};

int64_t prepare(const Layout& l, int64_t m0, int64_t m1, const Lhs& lhs) {
  return first_non_finite_row(l, m0, m1, lhs);
}

bool supported(const CpuFeatures& f) { return f.avx2 && f.fma; }

}  // namespace

extern const Kernel kAvx2Kernel = {"avx2",        "f32_f32bf16_f32_avx2_2x32",
                                   "avx2+fma",    Ymm::kNr,
                                   true,          false,
                                   supported,     prepare,
                                   run_exact<Ymm>};

}  // namespace dq4::dense
