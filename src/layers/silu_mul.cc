// SwiGLU's gating (dq4/ops.h).

#include "dq4/layers/ops.h"
#include "exp_vectorizable.h"

namespace dq4::ops {

DQ4_VECTOR_CLONES
void silu_mul(const float* gate_up, int64_t rows, int64_t cols, int64_t ld_gate_up, float* out,
              int64_t ldo) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* gate = gate_up + r * ld_gate_up;
    const float* up = gate + cols;
    float* o = out + r * ldo;
    for (int64_t i = 0; i < cols; ++i) o[i] = gate[i] / (1.0f + exp_vectorizable(-gate[i])) * up[i];
  }
}

}  // namespace dq4::ops
