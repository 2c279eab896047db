// W4A8 on AVX2 + FMA (no VNNI): PMADDUBSW on (u8 nibble, s8 activation) pairs cannot saturate
// (|15 * 128 * 2| = 3840, two planes summed 7680 < 32767), then PMADDWD by ones to int32.

#include "x86_ymm_w4a8.h"

namespace dq4::w4a8 {
namespace {

struct Avx2Dot {
  // A block of 32 k adds 8 pair sums (2 planes x 4 steps) of at most 2 x 15 x 128 = 3840 each:
  // 30720 < 32768, exact in int16, so a 32-k block widens to int32 once, not every step.
  static constexpr bool kPairSums = true;
  static __m256i pair_sums(__m256i lo, __m256i a_lo, __m256i hi, __m256i a_hi) {
    return _mm256_add_epi16(_mm256_maddubs_epi16(lo, a_lo), _mm256_maddubs_epi16(hi, a_hi));
  }
  static __m256i widen(__m256i pairs) { return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)); }
  static __m256i step(__m256i acc, __m256i lo, __m256i a_lo, __m256i hi, __m256i a_hi) {
    return _mm256_add_epi32(acc, widen(pair_sums(lo, a_lo, hi, a_hi)));
  }
};

bool supported(const CpuFeatures& f) { return f.avx2 && f.fma; }

}  // namespace

extern const Kernel kAvx2Kernel = {
    "avx2",        "qai8dx_qsi4_f32_avx2_4x16", "avx2+fma",         ymm::kNr, supported,
    ymm::quantize, ymm::run<Avx2Dot>,           ymm::scratch_bytes, true};

}  // namespace dq4::w4a8
