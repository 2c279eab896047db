// W4A8 on AVX512-VNNI: 64-column panels (4 zmm), VPDPBUSD with the unsigned nibble planes as the
// u8 operand and a broadcast dword of 4 activations as the s8 operand. Sum a*u = sum a*q + 8 sum a,
// so the group's activation sum (computed while quantizing) removes the +8 offset exactly.
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni.

#include <immintrin.h>

#include <cfloat>
#include <cstring>

#include "kernel.h"
#include "qai8dx.h"

namespace dq4::w4a8 {
namespace {

constexpr int kNr = 64;
constexpr int kVectors = kNr / 16;

// ---- activation quantization --------------------------------------------------------------

__m512 round_half_away(__m512 v) {
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 frac = _mm512_sub_ps(v, t);  // exact
  const __m512 abs_frac = _mm512_abs_ps(frac);
  const __mmask16 up = _mm512_cmp_ps_mask(abs_frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN));
  const __m512 one = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(_mm512_set1_ps(1.0f)), sign));
  return _mm512_mask_add_ps(t, up, t, one);
}

__mmask16 tail_mask(int64_t remaining) {
  return remaining >= 16 ? __mmask16(0xffff) : __mmask16((1u << remaining) - 1);
}

int64_t quantize(const float* x, int64_t ldx, int64_t m0, int64_t m1, const Layout& l,
                 const QuantizedLhs& lhs) {
  const __m512 finite_limit = _mm512_set1_ps(FLT_MAX);
  for (int64_t m = m0; m < m1; ++m) {
    const float* row = x + m * ldx;
    __m512 vmin = _mm512_set1_ps(FLT_MAX), vmax = _mm512_set1_ps(-FLT_MAX);
    __mmask16 non_finite = 0;
    for (int64_t k = 0; k < l.k; k += 16) {
      const __mmask16 mask = tail_mask(l.k - k);
      const __m512 v = _mm512_maskz_loadu_ps(mask, row + k);
      non_finite |= _mm512_mask_cmp_ps_mask(mask, _mm512_abs_ps(v), finite_limit, _CMP_NLE_UQ);
      vmin = _mm512_mask_min_ps(vmin, mask, vmin, v);
      vmax = _mm512_mask_max_ps(vmax, mask, vmax, v);
    }
    if (non_finite != 0) return m;
    const RowQuantParams p = row_quant_params(_mm512_reduce_min_ps(vmin), _mm512_reduce_max_ps(vmax));
    const __m512 mul = _mm512_set1_ps(p.mul);
    const __m512i zp = _mm512_set1_epi32(p.zp);
    const __m512i qmin = _mm512_set1_epi32(-128), qmax = _mm512_set1_epi32(127);
    int8_t* q = lhs.q + m * lhs.ldq;
    for (int64_t g = 0; g < l.groups; ++g) {
      __m512i sum = _mm512_setzero_si512();
      for (int64_t k = l.group_begin(g); k < l.group_end(g); k += 16) {
        const __mmask16 mask = tail_mask(l.group_end(g) - k);
        const __m512 v = _mm512_maskz_loadu_ps(mask, row + k);
        __m512i qi = _mm512_add_epi32(_mm512_cvtps_epi32(round_half_away(_mm512_mul_ps(v, mul))), zp);
        qi = _mm512_min_epi32(_mm512_max_epi32(qi, qmin), qmax);
        qi = _mm512_maskz_mov_epi32(mask, qi);
        sum = _mm512_add_epi32(sum, qi);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k), _mm512_cvtepi32_epi8(qi));
      }
      lhs.asum[m * lhs.groups + g] = _mm512_reduce_add_epi32(sum);
    }
    std::memset(q + l.k, 0, static_cast<size_t>(l.kp - l.k));
    lhs.recip[m] = p.recip;
    lhs.zp[m] = p.zp;
  }
  return -1;
}

// ---- matmul ---------------------------------------------------------------------------------

inline int32_t load_dword(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Integer dot products of MR rows with the 64 columns over `steps` steps of 8 k starting at k0.
// With one row the two nibble planes use separate accumulators to hide VPDPBUSD latency.
template <int MR>
inline void dot_steps(const uint8_t* w, int64_t steps, const int8_t* const* q, int64_t k0,
                      __m512i (&acc)[MR][kVectors]) {
  const __m512i low_mask = _mm512_set1_epi8(0x0f);
  constexpr bool kSplit = MR == 1;
  __m512i acc_hi[kSplit ? kVectors : 1];
  if constexpr (kSplit)
    for (int j = 0; j < kVectors; ++j) acc_hi[j] = _mm512_setzero_si512();
  for (int64_t s = 0; s < steps; ++s, w += kNr * 4) {
    __m512i lo[kVectors], hi[kVectors];
    for (int j = 0; j < kVectors; ++j) {
      const __m512i raw = _mm512_load_si512(w + 64 * j);
      lo[j] = _mm512_and_si512(raw, low_mask);
      hi[j] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low_mask);
    }
    const int64_t k = k0 + s * 8;
    for (int r = 0; r < MR; ++r) {
      const __m512i a_lo = _mm512_set1_epi32(load_dword(q[r] + k));
      const __m512i a_hi = _mm512_set1_epi32(load_dword(q[r] + k + 4));
      for (int j = 0; j < kVectors; ++j) {
        acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], lo[j], a_lo);
        if constexpr (kSplit)
          acc_hi[j] = _mm512_dpbusd_epi32(acc_hi[j], hi[j], a_hi);
        else
          acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], hi[j], a_hi);
      }
    }
  }
  if constexpr (kSplit)
    for (int j = 0; j < kVectors; ++j) acc[0][j] = _mm512_add_epi32(acc[0][j], acc_hi[j]);
}

inline __m512 clamp(__m512 y, __m512 lo, __m512 hi) {
  return _mm512_min_ps(_mm512_max_ps(y, lo), hi);  // (y > lo ? y : lo), then (y < hi ? y : hi)
}

template <int MR>
void tile(const Layout& l, const PanelView& panel, const QuantizedLhs& lhs, int64_t m,
          float* y, int64_t ldy, int64_t n0, float lo, float hi) {
  const int8_t* q[MR];
  for (int r = 0; r < MR; ++r) q[r] = lhs.q + (m + r) * lhs.ldq;
  const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  const int64_t valid = l.n - n0;
  __m512 out[MR][kVectors];
  if (l.channelwise) {
    __m512i acc[MR][kVectors] = {};
    dot_steps<MR>(panel.group_data(0), l.full_group_steps, q, 0, acc);
    for (int r = 0; r < MR; ++r) {
      const __m512i offset = _mm512_set1_epi32(8 * lhs.asum[(m + r) * lhs.groups]);
      const __m512i zp = _mm512_set1_epi32(lhs.zp[m + r]);
      const __m512 recip = _mm512_set1_ps(lhs.recip[m + r]);
      for (int j = 0; j < kVectors; ++j) {
        const __m512i sums = _mm512_loadu_si512(panel.column_sums() + 16 * j);
        const __m512i u = _mm512_sub_epi32(_mm512_sub_epi32(acc[r][j], offset),
                                           _mm512_mullo_epi32(zp, sums));
        const __m512 sp = _mm512_mul_ps(_mm512_loadu_ps(panel.scales() + 16 * j), recip);
        out[r][j] = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(u), sp),
                                  _mm512_loadu_ps(panel.cw_bias() + 16 * j));
      }
    }
  } else {
    __m512 facc[MR][kVectors];
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < kVectors; ++j) facc[r][j] = _mm512_setzero_ps();
    for (int64_t g = 0; g < l.groups; ++g) {
      __m512i acc[MR][kVectors] = {};
      dot_steps<MR>(panel.group_data(g), l.group_steps(g), q, l.group_begin(g), acc);
      const uint16_t* scales = panel.group_scales(g);
      __m512 d[kVectors];
      for (int j = 0; j < kVectors; ++j)
        d[j] = _mm512_castsi512_ps(_mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + 16 * j))), 16));
      for (int r = 0; r < MR; ++r) {
        const __m512i offset = _mm512_set1_epi32(8 * lhs.asum[(m + r) * lhs.groups + g]);
        for (int j = 0; j < kVectors; ++j)
          facc[r][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r][j], offset)), d[j],
                                       facc[r][j]);
      }
    }
    for (int r = 0; r < MR; ++r) {
      const __m512 neg_zp = _mm512_set1_ps(static_cast<float>(-lhs.zp[m + r]));
      const __m512 recip = _mm512_set1_ps(lhs.recip[m + r]);
      for (int j = 0; j < kVectors; ++j) {
        const __m512 acc = _mm512_fmadd_ps(_mm512_loadu_ps(panel.row_sums() + 16 * j), neg_zp, facc[r][j]);
        out[r][j] = _mm512_add_ps(_mm512_mul_ps(acc, recip), _mm512_loadu_ps(panel.gw_bias() + 16 * j));
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    float* dst = y + (m + r) * ldy + n0;
    for (int j = 0; j < kVectors; ++j) {
      const __m512 v = clamp(out[r][j], vlo, vhi);
      if (valid >= 16 * (j + 1))
        _mm512_storeu_ps(dst + 16 * j, v);
      else if (valid > 16 * j)
        _mm512_mask_storeu_ps(dst + 16 * j, tail_mask(valid - 16 * j), v);
    }
  }
}

void run(const Layout& l, const uint8_t* packed, const QuantizedLhs& lhs, int64_t m0, int64_t m1,
         int64_t p0, int64_t p1, float* y, int64_t ldy, float lo, float hi) {
  for (int64_t p = p0; p < p1; ++p) {
    const PanelView panel = panel_view(packed, l, p);
    const int64_t n0 = p * kNr;
    int64_t m = m0;
    for (; m + 4 <= m1; m += 4) tile<4>(l, panel, lhs, m, y, ldy, n0, lo, hi);
    switch (m1 - m) {
      case 3: tile<3>(l, panel, lhs, m, y, ldy, n0, lo, hi); break;
      case 2: tile<2>(l, panel, lhs, m, y, ldy, n0, lo, hi); break;
      case 1: tile<1>(l, panel, lhs, m, y, ldy, n0, lo, hi); break;
      default: break;
    }
  }
}

bool supported(const CpuFeatures& f) { return f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni; }

}  // namespace

extern const Kernel kAvx512VnniKernel = {"avx512_vnni", "avx512f+avx512bw+avx512vl+avx512_vnni", kNr,
                                         supported, quantize, run};

}  // namespace dq4::w4a8
