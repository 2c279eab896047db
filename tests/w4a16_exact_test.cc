// Every W4A16 variant this CPU can run gives output bit-identical (memcmp) to the scalar
// reference, for every case of the shared list, and independent of the number of threads.

#include <gtest/gtest.h>

#include "bit_exact.h"
#include "w4a16_test_support.h"

namespace dq4::test {
namespace {

class W4A16Exact : public ::testing::TestWithParam<W4A8Case> {};

TEST_P(W4A16Exact, EveryKernelMatchesReferenceBitForBit) {
  const W4A8Case& c = GetParam();
  const W4A8Data data = make_data(c);
  ThreadPool one(1), three(3);
  const auto reference = run_w4a16(c, data, *w4a16::find_kernel("reference"), one);
  const auto kernels = runnable_w4a16_kernels();
  ASSERT_GE(kernels.size(), 2u) << "no SIMD kernel runs on this CPU";
  for (const w4a16::Kernel* kernel : kernels) {
    for (ThreadPool* pool : {&one, &three}) {
      const auto y = run_w4a16(c, data, *kernel, *pool);
      ASSERT_TRUE(same_bits(reference, y, data.ldy,
                            std::string(w4a16::kernel_name(*kernel)) + " with " +
                                std::to_string(pool->size()) + " threads"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, W4A16Exact, ::testing::ValuesIn(w4a8_cases()),
                         [](const auto& info) { return info.param.name(); });

TEST(W4A16Strides, OutputPaddingBetweenRowsIsUntouched) {
  int strided_cases = 0;
  ThreadPool pool(2);
  for (const W4A8Case& c : w4a8_cases()) {
    if (c.ldy_pad == 0) continue;
    ++strided_cases;
    const W4A8Data data = make_data(c);
    for (const w4a16::Kernel* kernel : runnable_w4a16_kernels()) {
      const auto y = run_w4a16(c, data, *kernel, pool);
      ASSERT_TRUE(padding_untouched(y, c.m, c.n, data.ldy, -777.0f,
                                    std::string(w4a16::kernel_name(*kernel)) + " " + c.name()));
    }
  }
  EXPECT_GT(strided_cases, 0);
}

}  // namespace
}  // namespace dq4::test
