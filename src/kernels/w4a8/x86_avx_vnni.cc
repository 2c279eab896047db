// W4A8 on AVX-VNNI (VEX-encoded VPDPBUSD on ymm, e.g. Alder Lake, Zen 5 without using zmm).

#include "x86_ymm_w4a8.h"

namespace dq4::w4a8 {
namespace {

struct AvxVnniDot {
  static constexpr bool kPairSums = false;  // VPDPBUSD accumulates in int32 directly
  static __m256i step(__m256i acc, __m256i lo, __m256i a_lo, __m256i hi, __m256i a_hi) {
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(acc, lo, a_lo), hi, a_hi);
  }
};

bool supported(const CpuFeatures& f) { return f.avx2 && f.fma && f.avx_vnni; }

}  // namespace

extern const Kernel kAvxVnniKernel = {
    "avx_vnni",    "qai8dx_qsi4_f32_avxvnni_4x16", "avx2+fma+avx_vnni", ymm::kNr, supported,
    ymm::quantize, ymm::run<AvxVnniDot>,           ymm::scratch_bytes,  true};

}  // namespace dq4::w4a8
