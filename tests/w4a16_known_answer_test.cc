// Known answers for the W4A16 math of w4a16.h, small enough to check by hand, on every kernel.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "w4a16_test_support.h"

namespace dq4::test {
namespace {

float run_one(const int4::WeightSource& source, const w4a16::Kernel& kernel, const float* x) {
  const auto packed = w4a16::pack(source, kernel);
  float y = 0;
  w4a16::MatmulArgs args;
  args.m = 1;
  args.x = x;
  args.ldx = source.k;
  args.y = &y;
  args.ldy = 1;
  w4a16::matmul(packed, args);
  return y;
}

TEST(W4A16KnownAnswer, ChannelwiseDotProduct) {
  // 1*-1 + -8*0.5 + 7*2 + 3*0 = 9, times 0.125 = 1.125, plus 0.5: exact in f32.
  const float x[] = {-1.0f, 0.5f, 2.0f, 0.0f};
  const int8_t w[] = {1, -8, 7, 3};
  const float scale = 0.125f, bias = 0.5f;
  for (const w4a16::Kernel* kernel : runnable_w4a16_kernels()) {
    int4::WeightSource source;
    source.n = 1;
    source.k = 4;
    source.values = w;
    source.scales = &scale;
    source.bias = &bias;
    EXPECT_EQ(run_one(source, *kernel, x), 1.625f) << w4a16::family().name(*kernel);
  }
}

TEST(W4A16KnownAnswer, GroupChainsRoundInKOrder) {
  // Group 0 (k 0..31): acc = fma(1e8, 1, 0) = 1e8; fma(1, 1, 1e8) = 1e8 (the spacing of f32 at
  // 1e8 is 8, so the 1 is lost); fma(-1e8, 1, 1e8) = 0. Group 1: acc = fma(3, -2, 0) = -6.
  // out = fma(0, 0.5, 0) = 0, then fma(-6, 0.25, 0) = -1.5; + bias 0.25 = -1.25 (the real
  // product would be -0.75). bf16 scales 0x3F00 = 0.5 and 0x3E80 = 0.25.
  std::vector<float> x(64, 0.0f);
  std::vector<int8_t> w(64, 0);
  x[0] = 1e8f, x[1] = 1.0f, x[2] = -1e8f, x[32] = 3.0f;
  w[0] = w[1] = w[2] = 1, w[32] = -2;
  const uint16_t scales[] = {0x3F00, 0x3E80};
  const float bias = 0.25f;
  for (const w4a16::Kernel* kernel : runnable_w4a16_kernels()) {
    int4::WeightSource source;
    source.n = 1;
    source.k = 64;
    source.group_size = 32;
    source.values = w.data();
    source.scales = scales;
    source.scale_type = int4::ScaleType::bf16;
    source.bias = &bias;
    EXPECT_EQ(run_one(source, *kernel, x.data()), -1.25f) << w4a16::family().name(*kernel);
  }
}

TEST(W4A16KnownAnswer, F32GroupScalesAreUsedExactly) {
  // All x = 1 and q = 1: each group sums to 32 exactly; 0.1f and 0.3f are not bf16 values.
  std::vector<float> x(64, 1.0f);
  std::vector<int8_t> w(64, 1);
  const float scales[] = {0.1f, 0.3f};
  const float expected = std::fmaf(32.0f, 0.3f, std::fmaf(32.0f, 0.1f, 0.0f));
  for (const w4a16::Kernel* kernel : runnable_w4a16_kernels()) {
    int4::WeightSource source;
    source.n = 1;
    source.k = 64;
    source.group_size = 32;
    source.values = w.data();
    source.scales = scales;
    EXPECT_EQ(run_one(source, *kernel, x.data()), expected) << w4a16::family().name(*kernel);
    EXPECT_TRUE(w4a16::pack(source, *kernel).f32_group_scales());
  }
}

}  // namespace
}  // namespace dq4::test
