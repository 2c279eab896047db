// Round-to-nearest int4 quantization against hand-computed cases (the expected values follow the
// compressed-tensors arithmetic step by step: scale = absmax / 7.5 and w / scale rounded to the
// weight's dtype, then round half to even and clamp to [-8, 7]).

#include "dq4/quant/rtn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "dq4/kernels/half.h"
#include "expect_error.h"

namespace dq4::test {
namespace {

struct OwnedTensor {
  std::vector<uint8_t> bytes;
  TensorView view;
};

OwnedTensor f32_tensor(int64_t rows, int64_t cols, const std::vector<float>& values) {
  OwnedTensor t;
  t.bytes.resize(values.size() * 4);
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  t.view = {"w", Dtype::F32, {rows, cols}, nullptr, t.bytes.size(), "test.safetensors"};
  t.view.data = t.bytes.data();
  return t;
}

OwnedTensor half_tensor(Dtype dtype, int64_t rows, int64_t cols,
                        const std::vector<uint16_t>& bits) {
  OwnedTensor t;
  t.bytes.resize(bits.size() * 2);
  std::memcpy(t.bytes.data(), bits.data(), t.bytes.size());
  t.view = {"w", dtype, {rows, cols}, nullptr, t.bytes.size(), "test.safetensors"};
  t.view.data = t.bytes.data();
  return t;
}

std::vector<int> values_of(const RtnResult& r) { return {r.values.begin(), r.values.end()}; }

std::vector<float> f32_scales(const RtnResult& r) {
  std::vector<float> s(r.scales.size() / 4);
  std::memcpy(s.data(), r.scales.data(), r.scales.size());
  return s;
}

std::vector<uint16_t> half_scales(const RtnResult& r) {
  std::vector<uint16_t> s(r.scales.size() / 2);
  std::memcpy(s.data(), r.scales.data(), r.scales.size());
  return s;
}

TEST(Rtn, F32TiesRoundHalfToEvenAndMinus8Occurs) {
  // absmax 7.5 -> scale 1: the values are their own quotients. -7.5 -> -8, 2.5 -> 2, 0.5 -> 0,
  // -0.5 -> -0, 1.5 -> 2; 7.5 -> 8 clamps to 7.
  const auto t = f32_tensor(2, 6,
                            {-7.5f, 2.5f, 0.5f, -0.5f, 1.5f, 3.0f,  //
                             7.5f, -2.5f, 3.5f, 4.5f, -1.5f, 0.0f});
  const RtnResult r = rtn_quantize(t.view, 0);
  EXPECT_EQ(r.groups, 1);
  EXPECT_EQ(values_of(r), (std::vector<int>{-8, 2, 0, 0, 2, 3, 7, -2, 4, 4, -2, 0}));
  EXPECT_EQ(f32_scales(r), (std::vector<float>{1.0f, 1.0f}));
}

TEST(Rtn, F32DividesInsteadOfMultiplyingByTheReciprocal) {
  // scale = fl(2 / 7.5) = 0.26666668; -2 / scale = -7.4999995 in f32, so -7 (not -8).
  const auto t = f32_tensor(1, 2, {1.0f, -2.0f});
  const RtnResult r = rtn_quantize(t.view, 0);
  EXPECT_EQ(values_of(r), (std::vector<int>{4, -7}));
  EXPECT_EQ(f32_scales(r), (std::vector<float>{2.0f / 7.5f}));
}

TEST(Rtn, ZeroRowGetsEpsilonScale) {
  const auto f32 = f32_tensor(1, 3, {0.0f, -0.0f, 0.0f});
  const RtnResult r = rtn_quantize(f32.view, 0);
  EXPECT_EQ(values_of(r), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(f32_scales(r), (std::vector<float>{std::ldexp(1.0f, -23)}));

  const auto bf16 = half_tensor(Dtype::BF16, 1, 2, {0x0000, 0x8000});
  EXPECT_EQ(half_scales(rtn_quantize(bf16.view, 0)), (std::vector<uint16_t>{0x3c00}));  // 2^-7
  const auto f16 = half_tensor(Dtype::F16, 1, 2, {0x0000, 0x8000});
  EXPECT_EQ(half_scales(rtn_quantize(f16.view, 0)), (std::vector<uint16_t>{0x1400}));  // 2^-10
}

TEST(Rtn, Bf16QuotientIsRoundedToBf16BeforeRounding) {
  // absmax 1.375: scale = bf16(0.18333333) = 0.18359375 (0x3e3c).
  // 1.0078125 / 0.18359375 = 5.48936 -> bf16 5.5 -> 6 (f32 arithmetic alone would give 5);
  // -1.375 / 0.18359375 = -7.48936 -> bf16 -7.5 -> -8; 0.25 / s = 1.3617 -> bf16 1.359375 -> 1.
  const auto t = half_tensor(Dtype::BF16, 1, 4, {0x3fb0, 0x3f81, 0xbfb0, 0x3e80});
  const RtnResult r = rtn_quantize(t.view, 0);
  EXPECT_EQ(values_of(r), (std::vector<int>{7, 6, -8, 1}));
  EXPECT_EQ(half_scales(r), (std::vector<uint16_t>{0x3e3c}));
}

TEST(Rtn, F16QuotientIsRoundedToF16BeforeRounding) {
  // absmax 1: scale = f16(0.13333334) = 0.13330078 (0x3044).
  // 0.60009766 / s = 4.50183 -> f16 4.5 -> 4; 0.73291016 / s = 5.49817 -> f16 5.5 -> 6;
  // 1 / s = 7.50183 -> f16 7.5 -> 8 -> 7; -1 / s -> -8.
  const auto t = half_tensor(Dtype::F16, 1, 4, {0x38cd, 0x39dd, 0x3c00, 0xbc00});
  const RtnResult r = rtn_quantize(t.view, 0);
  EXPECT_EQ(values_of(r), (std::vector<int>{4, 6, 7, -8}));
  EXPECT_EQ(half_scales(r), (std::vector<uint16_t>{0x3044}));
}

TEST(Rtn, GroupsWithAPartialLastGroup) {
  // K = 5, G = 2: groups {1, -2}, {3, 0}, {0.5}.
  // {3, 0}: scale 0.4, 3 / 0.4 = 7.5 exactly in f32 -> 8 -> 7.
  // {0.5}: scale fl(0.5 / 7.5), 0.5 / scale = 7.4999995 -> 7.
  const auto t = f32_tensor(1, 5, {1.0f, -2.0f, 3.0f, 0.0f, 0.5f});
  const RtnResult r = rtn_quantize(t.view, 2);
  EXPECT_EQ(r.groups, 3);
  EXPECT_EQ(values_of(r), (std::vector<int>{4, -7, 7, 0, 7}));
  EXPECT_EQ(f32_scales(r), (std::vector<float>{2.0f / 7.5f, 3.0f / 7.5f, 0.5f / 7.5f}));
}

TEST(Rtn, ManyRowsOverThePoolMatchRowByRow) {
  std::vector<float> values(300 * 172);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = std::sin(static_cast<float>(i) * 0.37f) * (1.0f + static_cast<float>(i % 7));
  const auto t = f32_tensor(300, 172, values);
  const RtnResult whole = rtn_quantize(t.view, 32);
  ASSERT_EQ(whole.groups, 6);
  std::vector<int8_t> q(172);
  std::vector<uint8_t> scales(6 * 4);
  for (int64_t row : {0, 1, 150, 299}) {
    rtn_quantize_rows(t.view, 32, row, row + 1, q.data(), scales.data());
    EXPECT_EQ(0, std::memcmp(q.data(), whole.values.data() + row * 172, 172)) << row;
    EXPECT_EQ(0, std::memcmp(scales.data(), whole.scales.data() + row * 24, 24)) << row;
  }
}

TEST(Rtn, NonFiniteWeightsAreErrorsNamingTheTensor) {
  auto nan = f32_tensor(2, 3, {1, 2, 3, 4, std::numeric_limits<float>::quiet_NaN(), 6});
  nan.view.name = "model.layers.3.mlp.up_proj.weight";
  expect_error([&] { (void)rtn_quantize(nan.view, 0); },
               {"model.layers.3.mlp.up_proj.weight", "test.safetensors", "weight[1][1] is NaN"});
  const auto inf = half_tensor(Dtype::BF16, 1, 2, {0x3f80, 0xff80});
  expect_error([&] { (void)rtn_quantize(inf.view, 0); }, {"\"w\"", "weight[0][1] is infinite"});
}

TEST(Rtn, OtherDtypesAndShapesAreErrors) {
  OwnedTensor t = f32_tensor(1, 2, {1, 2});
  t.view.dtype = Dtype::I32;
  expect_error([&] { (void)rtn_quantize(t.view, 0); }, {"\"w\"", "is I32", "F32, BF16 and F16"});
  t.view.dtype = Dtype::F32;
  t.view.shape = {2};
  expect_error([&] { (void)rtn_quantize(t.view, 0); }, "not [rows, cols]");
}

TEST(FloatRounding, F32ToF16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);               // rounds to infinity
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (zero)
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units -> 2
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400);  // to normal
  for (uint32_t h = 0; h < 0x7c00; ++h)  // every finite half survives the round trip
    ASSERT_EQ(f32_to_f16(f16_to_f32(static_cast<uint16_t>(h))), h) << h;
}

}  // namespace
}  // namespace dq4::test
