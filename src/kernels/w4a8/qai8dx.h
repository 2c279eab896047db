#pragma once
// The scalar half of KleidiAI's per-row activation quantization (qai8dx), shared by every variant
// so that only the min/max scan and the value loop are vectorized. Normative: math doc §5.1/§6.

#include <cmath>
#include <cstdint>

#include "kernel.h"

namespace dq4::w4a8 {

struct RowQuantParams {
  float mul;    // 255 / (rmax - rmin): quantization multiplier
  float recip;  // 1 / mul: dequantization multiplier
  int32_t zp;   // nudged zero point, rounded half to even
};

DQ4_ALWAYS_INLINE RowQuantParams row_quant_params(float row_min, float row_max) {
  const float qmin = -128.0f;
  const float qmax = 127.0f;
  const float rmin = std::fmin(0.0f, row_min);
  const float rmax = std::fmax(0.0f, row_max);
  const float mul = rmin == rmax ? 1.0f : (qmax - qmin) / (rmax - rmin);
  const float recip = mul != 0.0f ? 1.0f / mul : 0.0f;
  const float descaled_min = rmin * mul;
  const float descaled_max = rmax * mul;
  const float from_min_error = qmin + descaled_min;
  const float from_max_error = qmax + descaled_max;
  float zpf = from_min_error + from_max_error > 0 ? qmin - descaled_min : qmax - descaled_max;
  zpf = std::fmax(zpf, qmin);
  zpf = std::fmin(zpf, qmax);
  return {mul, recip, static_cast<int32_t>(std::nearbyint(zpf))};
}

// round(v) with ties away from zero, as roundf; exact for every float (v - trunc(v) is exact).
DQ4_ALWAYS_INLINE int32_t round_away(float v) { return static_cast<int32_t>(std::round(v)); }

DQ4_ALWAYS_INLINE int8_t quantize_value(float x, const RowQuantParams& p) {
  int32_t v = round_away(x * p.mul) + p.zp;
  v = v < -128 ? -128 : v;
  v = v > 127 ? 127 : v;
  return static_cast<int8_t>(v);
}

}  // namespace dq4::w4a8
