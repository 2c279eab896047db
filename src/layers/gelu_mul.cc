// Gemma's GeGLU gating and soft-capping (dq4/ops.h).

#include <cmath>

#include "dq4/layers/ops.h"

namespace dq4::ops {

void gelu_tanh_mul(const float* gate_up, int64_t rows, int64_t cols, int64_t ld_gate_up, float* out,
                   int64_t ldo) {
  // PyTorch's constants: sqrt(2) * (2 / sqrt(pi)) * 0.5 = sqrt(2 / pi), rounded to f32.
  const float beta = static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = 0.044715f;
  for (int64_t r = 0; r < rows; ++r) {
    const float* gate = gate_up + r * ld_gate_up;
    const float* up = gate + cols;
    float* o = out + r * ldo;
    for (int64_t i = 0; i < cols; ++i) {
      const float g = gate[i];
      const float inner = beta * (g + kappa * (g * g * g));
      o[i] = 0.5f * g * (1.0f + std::tanh(inner)) * up[i];
    }
  }
}

void soft_cap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i] / cap) * cap;
}

}  // namespace dq4::ops
