// Bad input to the W4A16 family gives a dq4::Error whose message names the function, the field
// and the value; never UB. The weight checks are W4A8's (shared packer) under W4A16's name.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "dq4/kernels/error.h"
#include "dq4/kernels/w4a16.h"
#include "expect_error.h"
#include "small_int4_weights.h"

namespace dq4::test {
namespace {

using Weights = SmallInt4Weights;

TEST(W4A16BadInput, WeightSource) {
  Weights w;
  auto s = w.source();
  s.n = 0;
  expect_error([&] { w4a16::pack(s); }, {"w4a16::pack:", "n must be positive, got 0"});
  s = w.source();
  s.k = (int64_t{1} << 20) + 1;
  expect_error([&] { w4a16::pack(s); }, {"w4a16::pack:", "k 1048577 exceeds"});
  s = w.source();
  s.group_size = 48;
  expect_error([&] { w4a16::pack(s); }, {"w4a16::pack:", "group_size 48 is not a multiple of 32"});
  s = w.source();
  s.scales = nullptr;
  expect_error([&] { w4a16::pack(s); }, {"w4a16::pack:", "scales is null"});
  s = w.source();
  s.values = nullptr;
  expect_error([&] { w4a16::pack(s); }, "give exactly one of values");
  w.values[1 * 64 + 37] = 9;
  expect_error([&] { w4a16::pack(w.source()); },
               {"w4a16::pack:", "values[1][37] = 9 is outside the int4 range"});
}

TEST(W4A16BadInput, NonFiniteScalesAndBias) {
  Weights w;
  w.scales[2] = NAN;
  expect_error([&] { w4a16::pack(w.source()); }, {"w4a16::pack:", "scales[2][0] is not finite"});
  Weights b;
  std::vector<float> bias = {0, 1, INFINITY, 0};
  auto s = b.source();
  s.bias = bias.data();
  expect_error([&] { w4a16::pack(s); }, {"w4a16::pack:", "bias[2] is not finite"});
}

TEST(W4A16BadInput, F32GroupScalesBeyondBf16AreFine) {
  Weights g;  // W4A8 rejects 3.4e38 (it overflows bf16); W4A16 keeps f32 scales exact
  g.scales[3] = 3.4e38f;
  auto s = g.source();
  s.group_size = 32;
  const auto packed = w4a16::pack(s);
  EXPECT_TRUE(packed.f32_group_scales());
}

}  // namespace
}  // namespace dq4::test
