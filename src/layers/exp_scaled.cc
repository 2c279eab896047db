// Scaled exponentials of a vector (dq4/ops.h): softmax weights over a vocabulary.

#include "dq4/ops.h"
#include "exp_vectorizable.h"

namespace dq4::ops {

// One clone per x86 vector width (exact either way: the build has -ffp-contract=off).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void exp_scaled(const float* x, int64_t n, float shift, float scale, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = exp_vectorizable((x[i] - shift) * scale);
}

}  // namespace dq4::ops
