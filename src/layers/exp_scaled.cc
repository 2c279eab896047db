// Scaled exponentials of a vector (dq4/ops.h): softmax weights over a vocabulary.

#include "dq4/layers/ops.h"
#include "exp_vectorizable.h"

namespace dq4::ops {

DQ4_VECTOR_CLONES
void exp_scaled(const float* x, int64_t n, float shift, float scale, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = exp_vectorizable((x[i] - shift) * scale);
}

}  // namespace dq4::ops
