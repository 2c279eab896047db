// W4A16 on AVX-512F: 64-column panels, 4 zmm of 16 columns per step of 8 k. One nibble plane
// becomes float(q) of 16 columns in two instructions: a shift brings the nibble to bits 0..3 of
// each dword, and VPERMPS, which reads only those 4 bits of each index, looks it up in a table of
// u - 8. Compiled with -mavx2 -mfma -mavx512f.

#include <immintrin.h>

#include "tile.h"

namespace dq4::w4a16 {
namespace {

// Decode streams weights from DRAM once: prefetching this far ahead keeps enough lines in flight
// for one core to approach the memory bandwidth.
constexpr int kPrefetchBytes = 4096;

struct Avx512f {
  using F = __m512;
  using I = __m512i;
  static constexpr int kLanes = 16;
  static constexpr int kNr = 64;
  // Prefill tiles: 6 rows x 64 columns (24 accumulators). 12 x 32 (fewer dequantizing ops per
  // FMA, more broadcasts) measured slower; 8 x 32 no better overall and slower with groups of 32.
  static constexpr int kPrefillRows = 6;
  static constexpr int kPrefillVectors = 4;
  // Panels per decode tile: FMA latency 4 at 2 per cycle wants 8+ independent accumulators.
  static constexpr int decode_panels(int rows) { return rows <= 2 ? 2 : 1; }

  static DQ4_ALWAYS_INLINE void prefetch(const uint8_t* p) {
    _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchBytes), _MM_HINT_T0);
  }
  static DQ4_ALWAYS_INLINE I load_step(const uint8_t* p) { return _mm512_load_si512(p); }
  template <int i>
  static DQ4_ALWAYS_INLINE F dequant(I raw) {
    const __m512 table = _mm512_setr_ps(-8.0f, -7.0f, -6.0f, -5.0f, -4.0f, -3.0f, -2.0f, -1.0f,
                                        0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f);
    if constexpr (nibble_shift(i) == 0) return _mm512_permutexvar_ps(raw, table);
    return _mm512_permutexvar_ps(_mm512_srli_epi32(raw, nibble_shift(i)), table);
  }
  static DQ4_ALWAYS_INLINE F zero() { return _mm512_setzero_ps(); }
  static DQ4_ALWAYS_INLINE F set1(float v) { return _mm512_set1_ps(v); }
  static DQ4_ALWAYS_INLINE F broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static DQ4_ALWAYS_INLINE F load(const float* p) { return _mm512_load_ps(p); }
  static DQ4_ALWAYS_INLINE F loadu(const float* p) { return _mm512_loadu_ps(p); }
  static DQ4_ALWAYS_INLINE F load_bf16(const uint16_t* p) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
  }
  static DQ4_ALWAYS_INLINE void store(float* p, F v) { _mm512_store_ps(p, v); }
  static DQ4_ALWAYS_INLINE F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static DQ4_ALWAYS_INLINE F add(F a, F b) { return _mm512_add_ps(a, b); }
  // (y > lo ? y : lo), then (y < hi ? y : hi): MAXPS/MINPS return the second operand on NaN.
  static DQ4_ALWAYS_INLINE F clamp(F y, F lo, F hi) {
    return _mm512_min_ps(_mm512_max_ps(y, lo), hi);
  }
  static DQ4_ALWAYS_INLINE void store_columns(float* dst, F v, int64_t valid) {
    if (valid >= kLanes)
      _mm512_storeu_ps(dst, v);
    else
      _mm512_mask_storeu_ps(dst, static_cast<__mmask16>((1u << valid) - 1), v);
  }
};

bool supported(const CpuFeatures& f) { return f.avx512f; }

}  // namespace

extern const Kernel kAvx512fKernel = {
    "avx512f", "f32_qsi4_f32_avx512f_6x64", "avx512f", Avx512f::kNr, supported, run<Avx512f>};

}  // namespace dq4::w4a16
