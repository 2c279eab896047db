// dense::pack keeps bf16 weights bf16 (no widening in memory), widens f16 to f32, and records
// the kernel it packed for.

#include <gtest/gtest.h>

#include "dense_test_support.h"

namespace dq4::test {
namespace {

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
