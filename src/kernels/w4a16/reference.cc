// The scalar reference: the definition of the W4A16 math (w4a16.h), written for clarity.
// Built with -ffp-contract=off; fmaf appears exactly where the definition fuses.

#include <cmath>

#include "dq4/kernels/half.h"
#include "kernel.h"

namespace dq4::w4a16 {
namespace {

// The int4 weight of panel column c at k, read back from the packed layout.
float weight_at(const PanelView& panel, int64_t c, int64_t k) {
  const Layout& l = *panel.layout;
  const int64_t g = k / l.group;
  const int64_t kk = k - l.group_begin(g);
  const uint8_t byte = panel.group_data(g)[(kk / 8) * l.step_bytes + c * 4 + (kk % 4)];
  const int32_t u = (kk % 8) < 4 ? (byte & 0xf) : (byte >> 4);
  return static_cast<float>(u - 8);
}

float scale_at(const PanelView& panel, int64_t c, int64_t g) {
  const Layout& l = *panel.layout;
  if (l.channelwise) return panel.scales()[c];
  if (l.group_scales == GroupScales::f32) return panel.group_scales_f32(g)[c];
  return bf16_to_f32(panel.group_scales(g)[c]);
}

float clamp(float y, float lo, float hi) {
  y = y > lo ? y : lo;
  return y < hi ? y : hi;
}

float output(const PanelView& panel, int64_t c, const float* x) {
  const Layout& l = *panel.layout;
  float out = 0.0f;
  for (int64_t g = 0; g < l.groups; ++g) {
    float acc = 0.0f;
    for (int64_t k = l.group_begin(g); k < l.group_end(g); ++k)
      acc = std::fmaf(x[k], weight_at(panel, c, k), acc);
    out = std::fmaf(acc, scale_at(panel, c, g), out);
  }
  return out + panel.bias()[c];
}

void run(const Layout& l, const uint8_t* packed, const float* x, int64_t ldx, int64_t m0,
         int64_t m1, int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue e) {
  for (int64_t p = p0; p < p1; ++p) {
    const PanelView panel = panel_view(packed, l, p);
    for (int64_t c = 0; c < l.nr && p * l.nr + c < l.n; ++c)
      for (int64_t m = m0; m < m1; ++m)
        kernels::write_output(&y[m * ldy + p * l.nr + c],
                              clamp(output(panel, c, x + m * ldx), e.lo, e.hi), e);
  }
}

bool supported(const CpuFeatures&) { return true; }

}  // namespace

extern const Kernel kReferenceKernel = {
    "reference", "f32_qsi4_f32_scalar_1x16", "nothing", 16, supported, run};

}  // namespace dq4::w4a16
