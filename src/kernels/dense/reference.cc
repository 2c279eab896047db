// The scalar reference: the definition of dq4's dense math (dense.h), written for clarity.
// Built with -ffp-contract=off; std::fma is the one rounding per step the definition names.

#include <cmath>

#include "dq4/kernels/half.h"
#include "kernel.h"

namespace dq4::dense {
namespace {

// The weight of panel column c at k, read back from the packed layout.
float weight_at(const Layout& l, const uint8_t* panel, int64_t c, int64_t k) {
  const uint8_t* step = panel + (k / l.step_k()) * l.step_bytes + c * 4;
  if (l.element == Element::f32) return reinterpret_cast<const float*>(step)[0];
  return bf16_to_f32(reinterpret_cast<const uint16_t*>(step)[k % 2]);
}

float clamp(float y, float lo, float hi) {
  y = y > lo ? y : lo;
  return y < hi ? y : hi;
}

int64_t prepare(const Layout& l, int64_t m0, int64_t m1, const Lhs& lhs) {
  return first_non_finite_row(l, m0, m1, lhs);
}

void run(const Layout& l, const uint8_t* packed, const Lhs& lhs, int64_t m0, int64_t m1, int64_t p0,
         int64_t p1, float* y, int64_t ldy, kernels::Epilogue e, float* /*partial*/) {
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* panel = panel_at(packed, l, p);
    for (int64_t c = 0; c < l.nr && p * l.nr + c < l.n; ++c) {
      const int64_t n = p * l.nr + c;
      for (int64_t m = m0; m < m1; ++m) {
        const float* x = lhs.x + m * lhs.ldx;
        float acc = 0.0f;
        for (int64_t k = 0; k < l.k; ++k) acc = std::fma(x[k], weight_at(l, panel, c, k), acc);
        kernels::write_output(&y[m * ldy + n], clamp(acc + panel_bias(panel, l)[c], e.lo, e.hi), e);
      }
    }
  }
}

bool supported(const CpuFeatures&) { return true; }

}  // namespace

extern const Kernel kReferenceKernel = {
    "reference", "f32_f32bf16_f32_scalar_1x16", "nothing", 16, true, false, supported, prepare,
    run};

}  // namespace dq4::dense
