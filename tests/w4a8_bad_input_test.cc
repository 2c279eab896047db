// Bad input gives a dq4::Error whose message names the field and the value; never UB.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "dq4/kernels/error.h"
#include "dq4/kernels/w4a8.h"
#include "expect_error.h"
#include "small_int4_weights.h"

namespace dq4::test {
namespace {

using Weights = SmallInt4Weights;

TEST(W4A8BadInput, Sizes) {
  Weights w;
  auto s = w.source();
  s.n = 0;
  expect_error([&] { w4a8::pack(s); }, "n must be positive, got 0");
  s = w.source();
  s.k = -3;
  expect_error([&] { w4a8::pack(s); }, "k must be positive, got -3");
  s = w.source();
  s.k = (int64_t{1} << 20) + 1;
  expect_error([&] { w4a8::pack(s); }, "k 1048577 exceeds");
}

TEST(W4A8BadInput, GroupSizes) {
  Weights w;
  auto s = w.source();
  s.group_size = 48;
  expect_error([&] { w4a8::pack(s); }, "group_size 48 is not a multiple of 32");
  s.group_size = 128;
  expect_error([&] { w4a8::pack(s); }, "group_size 128 exceeds k 64");
  s.group_size = -32;
  expect_error([&] { w4a8::pack(s); }, "group_size must be >= 0, got -32");
}

TEST(W4A8BadInput, ValuesOutsideInt4) {
  Weights w;
  w.values[1 * 64 + 37] = 9;
  expect_error([&] { w4a8::pack(w.source()); }, "values[1][37] = 9 is outside the int4 range");
  Weights tail;  // also in a partial last step (k % 8 != 0)
  tail.k = 61;
  tail.values[2 * 61 + 60] = -9;
  expect_error([&] { w4a8::pack(tail.source()); }, "values[2][60] = -9");
}

TEST(W4A8BadInput, NullAndBothWeightBuffers) {
  Weights w;
  auto s = w.source();
  s.values = nullptr;
  expect_error([&] { w4a8::pack(s); }, "give exactly one of values");
  std::vector<int32_t> words(32);
  s = w.source();
  s.packed = words.data();
  expect_error([&] { w4a8::pack(s); }, "give exactly one of values");
  s = w.source();
  s.scales = nullptr;
  expect_error([&] { w4a8::pack(s); }, "scales is null");
}

TEST(W4A8BadInput, MisalignedBuffers) {
  Weights w;
  std::vector<float> storage(16, 0.5f);
  auto s = w.source();
  s.scales = reinterpret_cast<const uint8_t*>(storage.data()) + 1;
  expect_error([&] { w4a8::pack(s); }, "scales is not aligned to 4 bytes");
  std::vector<int32_t> words(40);
  s = w.source();
  s.values = nullptr;
  s.packed = reinterpret_cast<const int32_t*>(reinterpret_cast<const uint8_t*>(words.data()) + 2);
  expect_error([&] { w4a8::pack(s); }, "packed is not aligned to 4 bytes");
}

TEST(W4A8BadInput, NonFiniteScalesAndBias) {
  Weights w;
  w.scales[2] = NAN;
  expect_error([&] { w4a8::pack(w.source()); }, "scales[2][0] is not finite");
  Weights g;
  g.scales[3] = 3.4e38f;  // finite in f32, overflows when rounded to bf16
  auto s = g.source();
  s.group_size = 32;
  expect_error([&] { w4a8::pack(s); }, "scales[1][1] overflows bf16");
  Weights b;
  std::vector<float> bias = {0, 1, INFINITY, 0};
  s = b.source();
  s.bias = bias.data();
  expect_error([&] { w4a8::pack(s); }, "bias[2] is not finite");
}

}  // namespace
}  // namespace dq4::test
