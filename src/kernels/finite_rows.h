#pragma once
// The finiteness check of f32 activations that the dense and W4A16 drivers make before they run
// (W4A8 folds it into its quantization pass). Always inlined: each ISA's translation unit
// vectorizes it with its own instructions, and no out-of-line copy built with one ISA's flags
// can be linked into another's code.

#include <cfloat>
#include <cmath>
#include <cstdint>

namespace dq4::kernels {

// The first row of x in [m0, m1) holding a NaN or an infinity, or -1. Branch-free per row, so
// that the loop vectorizes.
inline __attribute__((always_inline)) int64_t first_non_finite_row(const float* x, int64_t ldx,
                                                                   int64_t k, int64_t m0,
                                                                   int64_t m1) {
  for (int64_t m = m0; m < m1; ++m) {
    const float* row = x + m * ldx;
    bool finite = true;
    for (int64_t i = 0; i < k; ++i) finite &= std::fabs(row[i]) <= FLT_MAX;
    if (!finite) return m;
  }
  return -1;
}

}  // namespace dq4::kernels
