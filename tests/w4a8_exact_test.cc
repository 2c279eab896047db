// Every kernel variant this CPU can run gives output bit-identical (memcmp) to the scalar
// reference, for every case of the shared list, and independent of the number of threads.

#include <gtest/gtest.h>

#include "bit_exact.h"
#include "w4a8_test_support.h"

namespace dq4::test {
namespace {

class W4A8Exact : public ::testing::TestWithParam<W4A8Case> {};

TEST_P(W4A8Exact, EveryKernelMatchesReferenceBitForBit) {
  const W4A8Case& c = GetParam();
  const W4A8Data data = make_data(c);
  ThreadPool one(1), three(3);
  const auto reference = run_w4a8(c, data, *w4a8::find_kernel("reference"), one);
  const auto kernels = runnable_kernels();
  ASSERT_GE(kernels.size(), 2u) << "no SIMD kernel runs on this CPU";
  for (const w4a8::Kernel* kernel : kernels) {
    for (ThreadPool* pool : {&one, &three}) {
      const auto y = run_w4a8(c, data, *kernel, *pool);
      ASSERT_TRUE(same_bits(reference, y, data.ldy,
                            std::string(w4a8::kernel_name(*kernel)) + " with " +
                                std::to_string(pool->size()) + " threads"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, W4A8Exact, ::testing::ValuesIn(w4a8_cases()),
                         [](const auto& info) { return info.param.name(); });

TEST(W4A8Strides, OutputPaddingBetweenRowsIsUntouched) {
  int strided_cases = 0;
  ThreadPool pool(2);
  for (const W4A8Case& c : w4a8_cases()) {
    if (c.ldy_pad == 0) continue;
    ++strided_cases;
    const W4A8Data data = make_data(c);
    for (const w4a8::Kernel* kernel : runnable_kernels()) {
      const auto y = run_w4a8(c, data, *kernel, pool);
      ASSERT_TRUE(padding_untouched(y, c.m, c.n, data.ldy, -777.0f,
                                    std::string(w4a8::kernel_name(*kernel)) + " " + c.name()));
    }
  }
  EXPECT_GT(strided_cases, 0);
}

}  // namespace
}  // namespace dq4::test
