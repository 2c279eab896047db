// Accuracy against the real product (f64): the exact math is one f32 fma chain, within
// (K + 2) 2^-23 sum|x w|; the bf16-activation variants (avx512_bf16, neon_bf16) within the bound
// dense.h states. Cases whose products overflow f32 are left to the exactness test.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "dense_test_support.h"

namespace dq4::test {
namespace {

double clamp(double v, double lo, double hi) { return std::min(std::max(v, lo), hi); }

// Checks every output of `kernel` against the f64 product with the given relative bound on
// sum|x w| (plus the bias rounding and denormal terms).
void expect_within(const DenseCase& c, const dense::Kernel& kernel, double relative) {
  const DenseData data = make_dense_data(c);
  ThreadPool pool(2);
  const auto y = run_dense(c, data, kernel, pool);
  for (int64_t m = 0; m < c.m; ++m)
    for (int64_t n = 0; n < c.n; ++n) {
      const ExactOutput e = exact_output(c, data, m, n);
      const double bound = relative * e.magnitude + 0x1p-23 * std::fabs(e.value) +
                           0x1p-126 * (e.weight_sum + 2.0 * static_cast<double>(c.k));
      const double want = clamp(e.value, c.lo, c.hi);
      ASSERT_LE(std::fabs(y[m * data.ldy + n] - want), bound)
          << dense::family().name(kernel) << " " << c.name() << " row " << m << " column " << n
          << ": " << y[m * data.ldy + n] << " vs " << want;
    }
}

TEST(DenseAccuracy, ReferenceIsOneF32FmaChain) {
  for (const DenseCase& c : dense_cases()) {
    if (c.rows == DenseRows::huge || c.m > 17) continue;
    expect_within(c, *dense::family().find("reference"), static_cast<double>(c.k + 2) * 0x1p-23);
  }
}

TEST(DenseAccuracy, Bf16ActivationKernelMeetsItsStatedBound) {
  int checked = 0;
  for (const dense::Kernel* kernel : runnable_dense_kernels()) {
    if (dense::family().exact(*kernel)) continue;
    for (const DenseCase& c : dense_cases()) {
      if (c.rows == DenseRows::huge || c.type != dense::WeightType::bf16) continue;
      expect_within(c, *kernel, 0x1p-8 + static_cast<double>(c.k + 2) * 0x1p-23);
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no bf16-activation kernel runs on this CPU";
}

// The bf16-activation kernels are the only inexact ones; the automatic choice is always exact.
TEST(DenseAccuracy, OnlyExactKernelsAreChosenAutomatically) {
  EXPECT_TRUE(dense::family().exact(dense::family().select("")));
  for (const dense::Kernel* kernel : dense::family().kernels()) {
    const std::string name(dense::family().name(*kernel));
    EXPECT_EQ(dense::family().exact(*kernel),
              name != "avx512_bf16" && name != "amx_bf16" && name != "neon_bf16")
        << name;
  }
}

}  // namespace
}  // namespace dq4::test
