// Every exact dense variant this CPU can run gives output bit-identical (memcmp) to the scalar
// reference, for every case of the shared list, independent of the number of threads; so does
// every variant on f32/f16 weights (the bf16-activation variant included).

#include <gtest/gtest.h>

#include "bit_exact.h"
#include "dense_test_support.h"

namespace dq4::test {
namespace {

class DenseExact : public ::testing::TestWithParam<DenseCase> {};

TEST_P(DenseExact, EveryExactKernelMatchesReferenceBitForBit) {
  const DenseCase& c = GetParam();
  const DenseData data = make_dense_data(c);
  ThreadPool one(1), three(3);
  const auto reference = run_dense(c, data, *dense::find_kernel("reference"), one);
  const auto kernels = runnable_dense_kernels();
  ASSERT_GE(kernels.size(), 2u) << "no SIMD kernel runs on this CPU";
  for (const dense::Kernel* kernel : kernels) {
    if (!dense::kernel_is_exact(*kernel) && c.type == dense::WeightType::bf16) continue;
    for (ThreadPool* pool : {&one, &three}) {
      const auto y = run_dense(c, data, *kernel, *pool);
      ASSERT_TRUE(same_bits(reference, y, data.ldy,
                            std::string(dense::kernel_name(*kernel)) + " with " +
                                std::to_string(pool->size()) + " threads"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, DenseExact, ::testing::ValuesIn(dense_cases()),
                         [](const auto& info) { return info.param.name(); });

TEST(DenseStrides, OutputPaddingBetweenRowsIsUntouched) {
  int strided_cases = 0;
  ThreadPool pool(2);
  for (const DenseCase& c : dense_cases()) {
    if (c.ldy_pad == 0) continue;
    ++strided_cases;
    const DenseData data = make_dense_data(c);
    for (const dense::Kernel* kernel : runnable_dense_kernels()) {
      const auto y = run_dense(c, data, *kernel, pool);
      ASSERT_TRUE(padding_untouched(y, c.m, c.n, data.ldy, -777.0f,
                                    std::string(dense::kernel_name(*kernel)) + " " + c.name()));
    }
  }
  EXPECT_GT(strided_cases, 0);
}

TEST(DensePack, KeepsBf16AndWidensF16) {
  const DenseCase bf16{1, 5, 7, dense::WeightType::bf16};
  const DenseCase f16{1, 5, 7, dense::WeightType::f16};
  for (const dense::Kernel* kernel : runnable_dense_kernels()) {
    const auto a = dense::pack(make_dense_data(bf16).source(bf16), *kernel);
    EXPECT_EQ(a.element(), dense::WeightType::bf16);
    const auto b = dense::pack(make_dense_data(f16).source(f16), *kernel);
    EXPECT_EQ(b.element(), dense::WeightType::f32);
    EXPECT_EQ(&a.kernel(), kernel);
    EXPECT_EQ(a.bytes() % 64, 0u);
  }
}

}  // namespace
}  // namespace dq4::test
