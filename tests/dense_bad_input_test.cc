// Bad input gives a dq4::Error whose message names the field and the value; never UB.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "dq4/dense.h"
#include "dq4/error.h"
#include "expect_error.h"

namespace dq4::test {
namespace {

struct Weights {
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
  Weights w;
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
  Weights w;
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
  Weights w;
  w.bf16[2 * 64 + 63] = 0x7fc0;  // NaN
  expect_error([&] { dense::pack(w.source()); }, "data[2][63] is not finite");
  Weights odd;  // in the upper half of the last pair of an odd K
  odd.k = 63;
  odd.bf16[1 * 63 + 62] = 0xff80;  // -inf
  expect_error([&] { dense::pack(odd.source()); }, "data[1][62] is not finite");
  Weights f;
  f.f32[3 * 64 + 5] = INFINITY;
  auto s = f.source();
  s.type = dense::WeightType::f32;
  s.data = f.f32.data();
  expect_error([&] { dense::pack(s); }, "data[3][5] is not finite");
  Weights h;
  h.bf16[7] = 0x7c00;  // f16 infinity
  s = h.source();
  s.type = dense::WeightType::f16;
  expect_error([&] { dense::pack(s); }, "data[0][7] is not finite");
  Weights b;
  std::vector<float> bias = {0, 1, NAN, 0};
  s = b.source();
  s.bias = bias.data();
  expect_error([&] { dense::pack(s); }, "bias[2] is not finite");
}

TEST(DenseBadInput, MatmulArguments) {
  Weights w;
  const auto packed = dense::pack(w.source());
  std::vector<float> x(4 * 64, 1.0f), y(4 * 4);
  MatmulArgs a;
  a.m = 2;
  a.x = x.data();
  a.ldx = 64;
  a.y = y.data();
  a.ldy = 4;
  auto with = [&](auto change) {
    MatmulArgs b = a;
    change(b);
    return [&, b] { dense::matmul(packed, b); };
  };
  expect_error(with([](auto& b) { b.m = 0; }), "dense::matmul: m must be positive, got 0");
  expect_error(with([](auto& b) { b.x = nullptr; }), "x is null");
  expect_error(with([](auto& b) { b.y = nullptr; }), "y is null");
  expect_error(with([](auto& b) { b.ldx = 63; }), "ldx 63 is smaller than k 64");
  expect_error(with([](auto& b) { b.ldy = 3; }), "ldy 3 is smaller than n 4");
  expect_error(with([&](auto& b) {
                 b.y = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(y.data()) + 2);
               }),
               "y is not aligned");
  expect_error(with([](auto& b) {
                 b.min = 1;
                 b.max = 0;
               }),
               "clamp range");
  expect_error(with([](auto& b) { b.max = NAN; }), "clamp range");
  expect_error(with([](auto& b) { b.max_threads = -1; }), "max_threads must be >= 0, got -1");
  x[64 + 5] = NAN;
  expect_error(with([](auto&) {}), "activation row 1 holds a NaN or infinite value");
  dense::PackedWeights empty;
  expect_error([&] { dense::matmul(empty, a); }, "weights are empty");
}

TEST(DenseBadInput, EveryKernelRejectsNonFiniteActivations) {
  for (const auto type : {dense::WeightType::bf16, dense::WeightType::f32}) {
    Weights w;
    auto s = w.source();
    if (type == dense::WeightType::f32) {
      s.type = type;
      s.data = w.f32.data();
    }
    std::vector<float> x(3 * 64, 0.25f), y(3 * 4);
    x[2 * 64 + 63] = -INFINITY;  // the last element: the tail of every vector loop
    for (const dense::Kernel* kernel : dense::compiled_kernels()) {
      if (!dense::kernel_supported(*kernel)) continue;
      const auto packed = dense::pack(s, *kernel);
      MatmulArgs a;
      a.m = 3;
      a.x = x.data();
      a.ldx = 64;
      a.y = y.data();
      a.ldy = 4;
      expect_error([&] { dense::matmul(packed, a); }, "activation row 2");
    }
  }
}

}  // namespace
}  // namespace dq4::test
