// Against a dequantize-then-f32 GEMM (accumulated in double): the only approximation W4A8 makes
// beyond the weights' own quantization is the int8 activation rounding, so per output
//
//   |y - y_exact| <= recip * (0.5 * sum_k |w_k s_k| + max_k |w_k s_k|) + 1e-5 * (|y_exact| + sum_k
//   |x_k w_k s_k|)
//
// where recip = (rmax - rmin) / 255 is the row's quantization step: each x_k moves by at most
// half a step, plus one step for the one value the [-128, 127] clamp can cut; the last term
// covers f32 rounding in the epilogue.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "w4a8_test_support.h"

namespace dq4::test {
namespace {

TEST(W4A8Accuracy, WithinTheActivationQuantizationBound) {
  ThreadPool pool(2);
  int checked = 0;
  for (const W4A8Case& c : w4a8_cases()) {
    if (c.rows != Rows::random || c.lo > -3e38f || c.m > 17) continue;
    const W4A8Data d = make_data(c, 3);
    const auto y = run_w4a8(c, d, w4a8::family().default_kernel(), pool);
    for (int64_t r = 0; r < c.m; ++r) {
      const float* x = d.x.data() + r * d.ldx;
      const auto [lo, hi] = std::minmax_element(x, x + c.k);
      const double step = (std::max(0.0f, *hi) - std::min(0.0f, *lo)) / 255.0;
      for (int64_t n = 0; n < c.n; ++n) {
        double exact = c.bias ? d.bias[n] : 0.0, weight_mass = 0, weight_max = 0, product_mass = 0;
        for (int64_t k = 0; k < c.k; ++k) {
          const int64_t g = c.group == 0 || c.group == c.k ? 0 : k / c.group;
          const double w = d.values[n * c.k + k] * static_cast<double>(d.effective_scale(c, n, g));
          exact += w * x[k];
          weight_mass += std::abs(w);
          weight_max = std::max(weight_max, std::abs(w));
          product_mass += std::abs(w * x[k]);
        }
        const double bound =
            step * (0.5 * weight_mass + weight_max) + 1e-5 * (std::abs(exact) + product_mass);
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
