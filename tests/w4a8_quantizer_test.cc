// Every W4A8 variant's activation quantizer against the reference one, field by field: the int8
// values (zero past k), the zero point, the scale, the sum of every 32-k block, and where the
// variant writes them the int16 lane corrections of its block sums. The matmul tests see these
// only through products, where a wrong split of a correction between its two int16 lanes still
// adds up to the same sum.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../src/kernels/w4a8/kernel.h"
#include "dq4/kernels/w4a8.h"
#include "w4a8_test_support.h"

namespace dq4 {
namespace {

struct Quantized {
  int64_t kp = 0, blocks = 0;  // each row's values (k rounded up to 32) and 32-k blocks
  std::vector<int8_t> q;
  std::vector<float> recip;
  std::vector<int32_t> zp, sums, corrections;
};

// The rows of x (m x k, row stride k) quantized by `kernel` with the layout matmul gives it.
Quantized quantize(const w4a8::Kernel& kernel, const std::vector<float>& x, int64_t m, int64_t k) {
  const w4a8::Layout l = w4a8::make_layout(1, k, k > 32 ? 32 : 0, kernel.nr);
  Quantized out;
  out.kp = l.kp;
  out.blocks = l.groups;
  out.q.assign(static_cast<size_t>(m * l.kp), int8_t{99});
  out.recip.assign(static_cast<size_t>(m), -1.0f);
  out.zp.assign(static_cast<size_t>(m), -999);
  out.sums.assign(static_cast<size_t>(m * l.groups), -999);
  out.corrections.assign(static_cast<size_t>(m * l.groups), -999);
  w4a8::QuantizedLhs lhs;
  lhs.q = out.q.data();
  lhs.ldq = l.kp;
  lhs.recip = out.recip.data();
  lhs.zp = out.zp.data();
  lhs.asum = out.sums.data();
  lhs.groups = l.groups;
  lhs.block_lane_corrections = out.corrections.data();
  EXPECT_EQ(kernel.quantize(x.data(), k, 0, m, l, lhs), -1) << kernel.name;
  return out;
}

// Rows that reach the corners of qai8dx: random, zero, constant, one sign only, values whose
// scaled form is a tie, ranges that clamp, and signed zeros.
std::vector<float> test_rows(int64_t k, int64_t* m) {
  std::mt19937 rng(static_cast<uint32_t>(k));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x;
  const auto row = [&](auto value) {
    for (int64_t i = 0; i < k; ++i) x.push_back(value(i));
  };
  row([&](int64_t) { return normal(rng); });
  row([&](int64_t) { return 1e4f * normal(rng); });
  row([&](int64_t) { return 0.0f; });
  row([&](int64_t) { return 3.25f; });
  row([&](int64_t) { return std::fabs(normal(rng)) + 0.5f; });
  row([&](int64_t) { return -std::fabs(normal(rng)) - 1e-3f; });
  row([&](int64_t i) { return (static_cast<float>(i % 511) - 255.0f) / 2.0f; });  // ties
  row([&](int64_t i) { return i % 3 == 0 ? 3e38f : i % 3 == 1 ? -3e38f : 1.0f; });
  row([&](int64_t i) { return i % 2 == 0 ? -0.0f : 1e-30f * static_cast<float>(i); });
  *m = static_cast<int64_t>(x.size()) / k;
  return x;
}

// The lane corrections a quantizer that writes them must give: from the block's values.
int32_t expected_correction(const int8_t* q) {
  int32_t total = 0, high = 0;
  for (int i = 0; i < 32; ++i) {
    total += q[i];
    if (i % 4 >= 2) high += q[i];
  }
  return w4a8::lane_correction(total, high);
}

TEST(W4A8Quantizer, EveryVariantWritesTheReferencesFields) {
  const w4a8::Kernel& reference = *w4a8::family().find("reference");
  int checked = 0;
  for (int64_t k : {1, 7, 8, 16, 31, 32, 33, 48, 63, 64, 65, 96, 100, 127, 128, 129, 200, 2048}) {
    int64_t m = 0;
    const std::vector<float> x = test_rows(k, &m);
    const Quantized want = quantize(reference, x, m, k);
    for (const w4a8::Kernel* kernel : test::runnable_kernels()) {
      const std::string where = std::string(kernel->name) + " k " + std::to_string(k);
      const Quantized got = quantize(*kernel, x, m, k);
      EXPECT_EQ(got.q, want.q) << where;
      EXPECT_EQ(got.zp, want.zp) << where;
      EXPECT_EQ(got.recip, want.recip) << where;
      EXPECT_EQ(got.sums, want.sums) << where;
      if (kernel->fills_lane_corrections) {
        for (int64_t r = 0; r < m; ++r)
          for (int64_t b = 0; b < got.blocks; ++b) {
            ASSERT_EQ(got.corrections[static_cast<size_t>(r * got.blocks + b)],
                      expected_correction(got.q.data() + r * got.kp + b * 32))
                << where << " row " << r << " block " << b;
          }
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 18);
}

}  // namespace
}  // namespace dq4
