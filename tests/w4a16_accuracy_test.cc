// Against a dequantize-then-GEMM in double with the checkpoint's scales: W4A16 adds only f32
// rounding, one rounding per fused multiply-add (K of them in the group chains, one per group for
// the scale, one for the bias), so per output
//
//   |y - y_exact| <= 1.01 (K + groups + 2) 2^-24 (sum_k |x_k q_k s_k| + |bias|)
//
// (the standard bound for recursive summation, with margin). A pack that rounded f32 or f16 group
// scales to bf16 (as W4A8 does) would be off by up to 2^-9 relative and fail it.

#include <gtest/gtest.h>

#include <cmath>

#include "w4a16_test_support.h"

namespace dq4::test {
namespace {

TEST(W4A16Accuracy, WithinTheF32RoundingBound) {
  ThreadPool pool(2);
  int checked = 0;
  for (const W4A8Case& c : w4a8_cases()) {
    if (c.rows != Rows::random || c.lo > -3e38f || c.m > 17 || c.huge_scales) continue;
    const W4A8Data d = make_data(c, 3);
    const auto y = run_w4a16(c, d, w4a16::family().default_kernel(), pool);
    const int64_t groups = c.group == 0 || c.group == c.k ? 1 : (c.k + c.group - 1) / c.group;
    for (int64_t r = 0; r < c.m; ++r) {
      const float* x = d.x.data() + r * d.ldx;
      for (int64_t n = 0; n < c.n; ++n) {
        const double bias = c.bias ? d.bias[n] : 0.0;
        double exact = bias, mass = std::abs(bias);
        for (int64_t k = 0; k < c.k; ++k) {
          const int64_t g = groups == 1 ? 0 : k / c.group;
          const double term = static_cast<double>(x[k]) * d.values[n * c.k + k] *
                              static_cast<double>(source_scale(c, d, n, g));
          exact += term;
          mass += std::abs(term);
        }
        const double bound = 1.01 * static_cast<double>(c.k + groups + 2) * std::ldexp(mass, -24);
        ASSERT_LE(std::abs(y[r * d.ldy + n] - exact), bound)
            << c.name() << " row " << r << " col " << n;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 10000);
}

}  // namespace
}  // namespace dq4::test
