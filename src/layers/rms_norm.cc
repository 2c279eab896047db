// RMSNorm of rows (dq4/ops.h).

#include <cmath>

#include "dq4/layers/ops.h"

namespace dq4::ops {

void rms_norm(const float* x, int64_t rows, int64_t cols, int64_t ldx, const float* weight,
              float eps, float* y, int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * ldx;
    float* out = y + r * ldy;
    // The mean of squares in double: the sum of thousands of f32 squares keeps its precision.
    double sum = 0;
    for (int64_t i = 0; i < cols; ++i) sum += static_cast<double>(in[i]) * in[i];
    const float variance = static_cast<float>(sum / static_cast<double>(cols));
    const float inv = 1.0f / std::sqrt(variance + eps);
    for (int64_t i = 0; i < cols; ++i) out[i] = weight[i] * (in[i] * inv);
  }
}

}  // namespace dq4::ops
