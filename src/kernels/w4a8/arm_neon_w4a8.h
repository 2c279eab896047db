#pragma once
// The NEON W4A8 kernel body shared by the neon, neon_dotprod and neon_i8mm variants: activation
// quantization, the float epilogue and the tiling. Each variant includes this header in its own
// translation unit (compiled with its own -march flags) and supplies the integer part:
//   Sums::sums<MR>(w, steps, q, k0, acc)   acc[r][j] += sum over `steps` steps of 8 k from k0 of
//                                          q[r][k] * u(k, column 4j..4j+3)
// where u = q_weight + 8 in [0, 15] is read from the packed nibble planes (steps is a multiple
// of 4, so whole 32-k blocks). Sum a*u = sum a*q + 8 sum a; the activation sums of the group
// remove the offset exactly. Panels are 16 columns: 4 int32x4 per row.

#include <arm_neon.h>

#include <cfloat>
#include <cstring>

#include "kernel.h"
#include "qai8dx.h"

namespace dq4::w4a8 {
// Internal linkage on purpose: each ISA translation unit gets its own copy, compiled with its own
// target flags, so the linker can never hand one variant's code to another.
namespace {
namespace arm {

constexpr int kNr = 16;
constexpr int kQuads = kNr / 4;

// ---- activation quantization (qai8dx, bit-identical to reference.cc) ------------------------

// 16 floats -> 16 int8: round half away from zero (FCVTAS, as std::round), + zp in int32, then
// clamp to [-128, 127] through two saturating narrows (clamping to int16 first changes nothing).
inline int8x16_t quantize16(const float* x, float32x4_t mul, int32x4_t zp) {
  int32x4_t v[4];
  for (int i = 0; i < 4; ++i)
    v[i] = vaddq_s32(vcvtaq_s32_f32(vmulq_f32(vld1q_f32(x + 4 * i), mul)), zp);
  const int16x8_t lo = vcombine_s16(vqmovn_s32(v[0]), vqmovn_s32(v[1]));
  const int16x8_t hi = vcombine_s16(vqmovn_s32(v[2]), vqmovn_s32(v[3]));
  return vcombine_s8(vqmovn_s16(lo), vqmovn_s16(hi));
}

inline int64_t quantize(const float* x, int64_t ldx, int64_t m0, int64_t m1, const Layout& l,
                        const QuantizedLhs& lhs) {
  const float32x4_t finite_limit = vdupq_n_f32(FLT_MAX);
  for (int64_t m = m0; m < m1; ++m) {
    const float* row = x + m * ldx;
    float32x4_t vmin = vdupq_n_f32(FLT_MAX), vmax = vdupq_n_f32(-FLT_MAX);
    uint32x4_t finite = vdupq_n_u32(~0u);
    int64_t k = 0;
    for (; k + 4 <= l.k; k += 4) {
      const float32x4_t v = vld1q_f32(row + k);
      finite = vandq_u32(finite, vcleq_f32(vabsq_f32(v), finite_limit));  // false for inf, NaN
      vmin = vminq_f32(vmin, v);
      vmax = vmaxq_f32(vmax, v);
    }
    if (vminvq_u32(finite) == 0) return m;
    float row_min = vminvq_f32(vmin), row_max = vmaxvq_f32(vmax);
    for (; k < l.k; ++k) {
      if (!(row[k] >= -FLT_MAX && row[k] <= FLT_MAX)) return m;
      row_min = row[k] < row_min ? row[k] : row_min;
      row_max = row[k] > row_max ? row[k] : row_max;
    }
    const RowQuantParams p = row_quant_params(row_min, row_max);
    const float32x4_t mul = vdupq_n_f32(p.mul);
    const int32x4_t zp = vdupq_n_s32(p.zp);
    int8_t* q = lhs.q + m * lhs.ldq;
    for (int64_t g = 0; g < l.groups; ++g) {
      const int64_t end = l.group_end(g);
      int32x4_t sum = vdupq_n_s32(0);
      int64_t kk = l.group_begin(g);
      for (; kk + 16 <= end; kk += 16) {
        const int8x16_t qi = quantize16(row + kk, mul, zp);
        vst1q_s8(q + kk, qi);
        sum = vpadalq_s16(sum, vpaddlq_s8(qi));
      }
      int32_t total = vaddvq_s32(sum);
      for (; kk < end; ++kk) {
        q[kk] = quantize_value(row[kk], p);
        total += q[kk];
      }
      lhs.asum[m * lhs.groups + g] = total;
    }
    std::memset(q + l.k, 0, static_cast<size_t>(l.kp - l.k));
    lhs.recip[m] = p.recip;
    lhs.zp[m] = p.zp;
  }
  return -1;
}

// ---- epilogue and tiling ----------------------------------------------------------------------

// (y > lo ? y : lo), then (y < hi ? y : hi), as reference.cc; FMAX/FMIN would differ on NaN.
inline float32x4_t clamp(float32x4_t y, float32x4_t lo, float32x4_t hi) {
  y = vbslq_f32(vcgtq_f32(y, lo), y, lo);
  return vbslq_f32(vcltq_f32(y, hi), y, hi);
}

inline float32x4_t load_bf16(const uint16_t* p) {
  return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

template <class Sums, int MR>
void tile(const Layout& l, const PanelView& panel, const QuantizedLhs& lhs, int64_t m, float* y,
          int64_t ldy, int64_t n0, kernels::Epilogue e) {
  const int8_t* q[MR];
  for (int r = 0; r < MR; ++r) q[r] = lhs.q + (m + r) * lhs.ldq;
  float32x4_t out[MR][kQuads];
  if (l.channelwise) {
    int32x4_t acc[MR][kQuads];
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < kQuads; ++j) acc[r][j] = vdupq_n_s32(0);
    Sums::template sums<MR>(panel.group_data(0), l.full_group_steps, q, 0, acc);
    for (int r = 0; r < MR; ++r) {
      const int32x4_t offset = vdupq_n_s32(8 * lhs.asum[(m + r) * lhs.groups]);
      const int32_t zp = lhs.zp[m + r];
      const float32x4_t recip = vdupq_n_f32(lhs.recip[m + r]);
      for (int j = 0; j < kQuads; ++j) {
        // U = sum (a - zp) w = (sum a*u - 8 sum a) - zp * (sum of w over K), exact in int32
        const int32x4_t sums = vld1q_s32(panel.column_sums() + 4 * j);
        const int32x4_t u = vsubq_s32(vsubq_s32(acc[r][j], offset), vmulq_n_s32(sums, zp));
        const float32x4_t sp = vmulq_f32(vld1q_f32(panel.scales() + 4 * j), recip);
        out[r][j] = vaddq_f32(vmulq_f32(vcvtq_f32_s32(u), sp), vld1q_f32(panel.cw_bias() + 4 * j));
      }
    }
  } else {
    float32x4_t facc[MR][kQuads];
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < kQuads; ++j) facc[r][j] = vdupq_n_f32(0.0f);
    for (int64_t g = 0; g < l.groups; ++g) {
      int32x4_t acc[MR][kQuads];
      for (int r = 0; r < MR; ++r)
        for (int j = 0; j < kQuads; ++j) acc[r][j] = vdupq_n_s32(0);
      Sums::template sums<MR>(panel.group_data(g), l.group_steps(g), q, l.group_begin(g), acc);
      float32x4_t d[kQuads];
      for (int j = 0; j < kQuads; ++j) d[j] = load_bf16(panel.group_scales(g) + 4 * j);
      for (int r = 0; r < MR; ++r) {
        const int32x4_t offset = vdupq_n_s32(8 * lhs.asum[(m + r) * lhs.groups + g]);
        for (int j = 0; j < kQuads; ++j)  // acc = fma(float(block), d, acc)
          facc[r][j] = vfmaq_f32(facc[r][j], vcvtq_f32_s32(vsubq_s32(acc[r][j], offset)), d[j]);
      }
    }
    for (int r = 0; r < MR; ++r) {
      const float32x4_t neg_zp = vdupq_n_f32(static_cast<float>(-lhs.zp[m + r]));
      const float32x4_t recip = vdupq_n_f32(lhs.recip[m + r]);
      for (int j = 0; j < kQuads; ++j) {
        const float32x4_t acc = vfmaq_f32(facc[r][j], vld1q_f32(panel.row_sums() + 4 * j), neg_zp);
        out[r][j] = vaddq_f32(vmulq_f32(acc, recip), vld1q_f32(panel.gw_bias() + 4 * j));
      }
    }
  }
  const float32x4_t vlo = vdupq_n_f32(e.lo), vhi = vdupq_n_f32(e.hi);
  const int64_t valid = l.n - n0;
  for (int r = 0; r < MR; ++r) {
    float* dst = y + (m + r) * ldy + n0;
    for (int j = 0; j < kQuads; ++j) {
      const float32x4_t v = clamp(out[r][j], vlo, vhi);
      if (valid >= 4 * (j + 1)) {
        vst1q_f32(dst + 4 * j, e.accumulate ? vaddq_f32(vld1q_f32(dst + 4 * j), v) : v);
      } else if (valid > 4 * j) {
        float lanes[4];
        vst1q_f32(lanes, v);
        for (int64_t i = 0; i < valid - 4 * j; ++i)
          kernels::write_output(dst + 4 * j + i, lanes[i], e);
      }
    }
  }
}

// Rows go in tiles of 4 (the GEMM path), the last 1..3 rows in one narrower tile; a single row is
// the GEMV path (Sums::sums<1>).
template <class Sums>
void run(const Layout& l, const uint8_t* packed, const QuantizedLhs& lhs, int64_t m0, int64_t m1,
         int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue e, uint8_t* /*scratch*/) {
  for (int64_t p = p0; p < p1; ++p) {
    const PanelView panel = panel_view(packed, l, p);
    const int64_t n0 = p * kNr;
    int64_t m = m0;
    for (; m + 4 <= m1; m += 4) tile<Sums, 4>(l, panel, lhs, m, y, ldy, n0, e);
    switch (m1 - m) {
      case 3:
        tile<Sums, 3>(l, panel, lhs, m, y, ldy, n0, e);
        break;
      case 2:
        tile<Sums, 2>(l, panel, lhs, m, y, ldy, n0, e);
        break;
      case 1:
        tile<Sums, 1>(l, panel, lhs, m, y, ldy, n0, e);
        break;
      default:
        break;
    }
  }
}

}  // namespace arm
}  // namespace
}  // namespace dq4::w4a8
