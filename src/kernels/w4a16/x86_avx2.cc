// W4A16 on AVX2 + FMA: 16-column panels, 2 ymm of 8 columns per step of 8 k. The step's dwords
// are XORed with 0x88888888 once, which turns each nibble u = q + 8 into q as a signed 4-bit
// value; a left shift to the top of the dword, an arithmetic right shift by 28 and a convert then
// give float(q) of 8 columns. Compiled with -mavx2 -mfma.

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "tile.h"

namespace dq4::w4a16 {
namespace {

// Decode streams weights from DRAM once: prefetch ahead (one line per step of 16 columns).
constexpr int kPrefetchBytes = 2048;

struct Avx2 {
  using F = __m256;
  using I = __m256i;
  static constexpr int kLanes = 8;
  static constexpr int kNr = 16;
  // Prefill tiles: 6 rows x 16 columns (12 accumulators of the 16 registers).
  static constexpr int kPrefillRows = 6;
  static constexpr int kPrefillVectors = 2;
  // Panels per decode tile: 8+ independent accumulators without running out of 16 registers.
  static constexpr int decode_panels(int rows) { return rows == 1 ? 3 : rows == 2 ? 2 : 1; }

  static DQ4_ALWAYS_INLINE void prefetch(const uint8_t* p) {
    if ((reinterpret_cast<uintptr_t>(p) & 63) == 0)
      _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchBytes), _MM_HINT_T0);
  }
  static DQ4_ALWAYS_INLINE I load_step(const uint8_t* p) {
    const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
    return _mm256_xor_si256(raw, _mm256_set1_epi32(static_cast<int32_t>(0x88888888u)));
  }
  template <int i>
  static DQ4_ALWAYS_INLINE F dequant(I raw) {
    constexpr int kUp = 28 - nibble_shift(i);
    const __m256i top = kUp == 0 ? raw : _mm256_slli_epi32(raw, kUp);
    return _mm256_cvtepi32_ps(_mm256_srai_epi32(top, 28));
  }
  static DQ4_ALWAYS_INLINE F zero() { return _mm256_setzero_ps(); }
  static DQ4_ALWAYS_INLINE F set1(float v) { return _mm256_set1_ps(v); }
  static DQ4_ALWAYS_INLINE F broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static DQ4_ALWAYS_INLINE F load(const float* p) { return _mm256_load_ps(p); }
  static DQ4_ALWAYS_INLINE F loadu(const float* p) { return _mm256_loadu_ps(p); }
  static DQ4_ALWAYS_INLINE F load_bf16(const uint16_t* p) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
  }
  static DQ4_ALWAYS_INLINE void store(float* p, F v) { _mm256_store_ps(p, v); }
  static DQ4_ALWAYS_INLINE F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static DQ4_ALWAYS_INLINE F add(F a, F b) { return _mm256_add_ps(a, b); }
  // (y > lo ? y : lo), then (y < hi ? y : hi): MAXPS/MINPS return the second operand on NaN.
  static DQ4_ALWAYS_INLINE F clamp(F y, F lo, F hi) {
    return _mm256_min_ps(_mm256_max_ps(y, lo), hi);
  }
  static DQ4_ALWAYS_INLINE void store_columns(float* dst, F v, int64_t valid) {
    if (valid >= kLanes) {
      _mm256_storeu_ps(dst, v);
    } else {
      float lanes[kLanes];
      _mm256_storeu_ps(lanes, v);
      std::memcpy(dst, lanes, static_cast<size_t>(valid) * sizeof(float));
    }
  }
};

bool supported(const CpuFeatures& f) { return f.avx2 && f.fma; }

}  // namespace

extern const Kernel kAvx2Kernel = {
    "avx2", "f32_qsi4_f32_avx2_6x16", "avx2+fma", Avx2::kNr, supported, run<Avx2>};

}  // namespace dq4::w4a16
