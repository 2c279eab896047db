// The scalar reference: the definition of dq4's W4A8 math (math doc §6.2), written for clarity.
// Built with -ffp-contract=off; fmaf appears exactly where KleidiAI fuses.

#include <cfloat>
#include <cmath>

#include "dq4/kernels/half.h"
#include "kernel.h"
#include "qai8dx.h"

namespace dq4::w4a8 {
namespace {

int64_t quantize(const float* x, int64_t ldx, int64_t m0, int64_t m1, const Layout& l,
                 const QuantizedLhs& lhs) {
  for (int64_t m = m0; m < m1; ++m) {
    const float* row = x + m * ldx;
    float row_min = FLT_MAX;
    float row_max = -FLT_MAX;
    for (int64_t k = 0; k < l.k; ++k) {
      if (!std::isfinite(row[k])) return m;
      row_min = std::fmin(row_min, row[k]);
      row_max = std::fmax(row_max, row[k]);
    }
    const RowQuantParams params = row_quant_params(row_min, row_max);
    int8_t* q = lhs.q + m * lhs.ldq;
    for (int64_t k = 0; k < l.k; ++k) q[k] = quantize_value(row[k], params);
    for (int64_t k = l.k; k < l.kp; ++k) q[k] = 0;
    for (int64_t g = 0; g < l.groups; ++g) {
      int32_t sum = 0;
      for (int64_t k = l.group_begin(g); k < l.group_end(g); ++k) sum += q[k];
      lhs.asum[m * lhs.groups + g] = sum;
    }
    lhs.recip[m] = params.recip;
    lhs.zp[m] = params.zp;
  }
  return -1;
}

// The int4 weight of panel column c at k, read back from the packed layout.
int32_t weight_at(const PanelView& panel, int64_t c, int64_t k) {
  const Layout& l = *panel.layout;
  const int64_t g = k / l.group;
  const int64_t kk = k - l.group_begin(g);
  const uint8_t byte = panel.group_data(g)[(kk / 8) * l.step_bytes + c * 4 + (kk % 4)];
  const int32_t u = (kk % 8) < 4 ? (byte & 0xf) : (byte >> 4);
  return u - 8;
}

float clamp(float y, float lo, float hi) {
  y = y > lo ? y : lo;
  return y < hi ? y : hi;
}

float channelwise_output(const PanelView& panel, int64_t c, const int8_t* q, int32_t zp,
                         float recip) {
  int64_t u = 0;  // |u| <= 2040 k fits int32 for k <= kMaxK
  for (int64_t k = 0; k < panel.layout->k; ++k) u += (q[k] - zp) * weight_at(panel, c, k);
  const float y = static_cast<float>(static_cast<int32_t>(u)) * (panel.scales()[c] * recip);
  return y + panel.cw_bias()[c];
}

float groupwise_output(const PanelView& panel, int64_t c, const int8_t* q, int32_t zp,
                       float recip) {
  const Layout& l = *panel.layout;
  float acc = 0.0f;
  for (int64_t g = 0; g < l.groups; ++g) {
    int32_t block = 0;
    for (int64_t k = l.group_begin(g); k < l.group_end(g); ++k)
      block += q[k] * weight_at(panel, c, k);
    acc = std::fmaf(static_cast<float>(block), bf16_to_f32(panel.group_scales(g)[c]), acc);
  }
  acc = std::fmaf(panel.row_sums()[c], static_cast<float>(-zp), acc);
  return acc * recip + panel.gw_bias()[c];
}

void run(const Layout& l, const uint8_t* packed, const QuantizedLhs& lhs, int64_t m0, int64_t m1,
         int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue e, uint8_t* /*scratch*/) {
  for (int64_t p = p0; p < p1; ++p) {
    const PanelView panel = panel_view(packed, l, p);
    for (int64_t c = 0; c < l.nr && p * l.nr + c < l.n; ++c) {
      const int64_t n = p * l.nr + c;
      for (int64_t m = m0; m < m1; ++m) {
        const int8_t* q = lhs.q + m * lhs.ldq;
        const float out = l.channelwise ? channelwise_output(panel, c, q, lhs.zp[m], lhs.recip[m])
                                        : groupwise_output(panel, c, q, lhs.zp[m], lhs.recip[m]);
        kernels::write_output(&y[m * ldy + n], clamp(out, e.lo, e.hi), e);
      }
    }
  }
}

bool supported(const CpuFeatures&) { return true; }

}  // namespace

extern const Kernel kReferenceKernel = {
    "reference", "qai8dx_qsi4_f32_scalar_1x16", "nothing", 16, supported, quantize, run};

}  // namespace dq4::w4a8
