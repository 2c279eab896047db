// Bad input gives a dq4::Error whose message names the field and the value; never UB.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "dq4/kernels/dense.h"
#include "dq4/kernels/error.h"
#include "expect_error.h"

namespace dq4::test {
namespace {

struct DenseWeights {
  int64_t n = 4, k = 64;
  std::vector<uint16_t> bf16 = std::vector<uint16_t>(256, 0x3f80);  // 1.0
  std::vector<float> f32 = std::vector<float>(256, 1.0f);
  dense::WeightSource source() {
    dense::WeightSource s;
    s.n = n;
    s.k = k;
    s.data = bf16.data();
    s.type = dense::WeightType::bf16;
    return s;
  }
};

TEST(DenseBadInput, Sizes) {
  DenseWeights w;
  auto s = w.source();
  s.n = 0;
  expect_error([&] { dense::pack(s); }, "dense::pack: n must be positive, got 0");
  s = w.source();
  s.k = -3;
  expect_error([&] { dense::pack(s); }, "k must be positive, got -3");
  s = w.source();
  s.k = (int64_t{1} << 24) + 1;
  expect_error([&] { dense::pack(s); }, "k 16777217 exceeds");
  s = w.source();
  s.n = (int64_t{1} << 31) + 1;
  expect_error([&] { dense::pack(s); }, "n 2147483649 exceeds");
}

TEST(DenseBadInput, NullMisalignedAndUnknownType) {
  DenseWeights w;
  auto s = w.source();
  s.data = nullptr;
  expect_error([&] { dense::pack(s); }, "data is null");
  s = w.source();
  s.data = reinterpret_cast<const uint8_t*>(w.bf16.data()) + 1;
  expect_error([&] { dense::pack(s); }, "data is not aligned to 2 bytes");
  s = w.source();
  s.type = dense::WeightType::f32;
  s.data = reinterpret_cast<const uint8_t*>(w.f32.data()) + 2;
  expect_error([&] { dense::pack(s); }, "data is not aligned to 4 bytes");
  std::vector<float> bias(8);
  s = w.source();
  s.bias = reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(bias.data()) + 1);
  expect_error([&] { dense::pack(s); }, "bias is not aligned to 4 bytes");
  s = w.source();
  s.type = static_cast<dense::WeightType>(7);
  expect_error([&] { dense::pack(s); }, "type 7 is not a weight type");
}

TEST(DenseBadInput, NonFiniteWeightsAndBias) {
  DenseWeights w;
  w.bf16[2 * 64 + 63] = 0x7fc0;  // NaN
  expect_error([&] { dense::pack(w.source()); }, "data[2][63] is not finite");
  DenseWeights odd;  // in the upper half of the last pair of an odd K
  odd.k = 63;
  odd.bf16[1 * 63 + 62] = 0xff80;  // -inf
  expect_error([&] { dense::pack(odd.source()); }, "data[1][62] is not finite");
  DenseWeights f;
  f.f32[3 * 64 + 5] = INFINITY;
  auto s = f.source();
  s.type = dense::WeightType::f32;
  s.data = f.f32.data();
  expect_error([&] { dense::pack(s); }, "data[3][5] is not finite");
  DenseWeights h;
  h.bf16[7] = 0x7c00;  // f16 infinity
  s = h.source();
  s.type = dense::WeightType::f16;
  expect_error([&] { dense::pack(s); }, "data[0][7] is not finite");
  DenseWeights b;
  std::vector<float> bias = {0, 1, NAN, 0};
  s = b.source();
  s.bias = bias.data();
  expect_error([&] { dense::pack(s); }, "bias[2] is not finite");
}

}  // namespace
}  // namespace dq4::test
