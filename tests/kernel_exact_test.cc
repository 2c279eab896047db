// Every kernel variant this CPU can run, of every family (W4A8, W4A16, dense), gives output
// bit-identical (memcmp) to its family's scalar reference for every case of the family's shared
// list, independent of the number of threads, and never writes the padding between output rows.
// Dense variants that round activations to bf16 are exact only on f32/f16 weights. Accumulating
// into y (MatmulArgs::accumulate), every variant gives old y + its stored output, bit for bit.

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "bit_exact.h"
#include "dense_test_support.h"
#include "w4a16_test_support.h"
#include "w4a8_test_support.h"

namespace dq4::test {
namespace {

// What the checks below need of a family: its cases, data, kernels and a runner.
struct W4A8Family {
  using Case = W4A8Case;
  using Kernel = w4a8::Kernel;
  static std::vector<Case> cases() { return w4a8_cases(); }
  static W4A8Data data(const Case& c) { return make_data(c); }
  static const Kernel& reference() { return *w4a8::family().find("reference"); }
  static std::vector<const Kernel*> kernels() { return runnable_kernels(); }
  static std::string name(const Kernel& k) { return std::string(w4a8::family().name(k)); }
  static bool exact_on(const Kernel&, const Case&) { return true; }
  static std::vector<float> run(const Case& c, const W4A8Data& d, const Kernel& k, ThreadPool& pool,
                                const std::vector<float>* onto = nullptr) {
    return run_w4a8(c, d, k, pool, onto);
  }
};

struct W4A16Family {
  using Case = W4A8Case;
  using Kernel = w4a16::Kernel;
  static std::vector<Case> cases() { return w4a8_cases(); }
  static W4A8Data data(const Case& c) { return make_data(c); }
  static const Kernel& reference() { return *w4a16::family().find("reference"); }
  static std::vector<const Kernel*> kernels() { return runnable_w4a16_kernels(); }
  static std::string name(const Kernel& k) { return std::string(w4a16::family().name(k)); }
  static bool exact_on(const Kernel&, const Case&) { return true; }
  static std::vector<float> run(const Case& c, const W4A8Data& d, const Kernel& k, ThreadPool& pool,
                                const std::vector<float>* onto = nullptr) {
    return run_w4a16(c, d, k, pool, onto);
  }
};

struct DenseFamily {
  using Case = DenseCase;
  using Kernel = dense::Kernel;
  static std::vector<Case> cases() { return dense_cases(); }
  static DenseData data(const Case& c) { return make_dense_data(c); }
  static const Kernel& reference() { return *dense::family().find("reference"); }
  static std::vector<const Kernel*> kernels() { return runnable_dense_kernels(); }
  static std::string name(const Kernel& k) { return std::string(dense::family().name(k)); }
  static bool exact_on(const Kernel& k, const Case& c) {
    return dense::family().exact(k) || c.type != dense::WeightType::bf16;
  }
  static std::vector<float> run(const Case& c, const DenseData& d, const Kernel& k,
                                ThreadPool& pool, const std::vector<float>* onto = nullptr) {
    return run_dense(c, d, k, pool, onto);
  }
};

template <class Family>
void expect_every_kernel_bit_exact(const typename Family::Case& c) {
  const auto data = Family::data(c);
  ThreadPool one(1), three(3);
  const auto reference = Family::run(c, data, Family::reference(), one);
  const auto kernels = Family::kernels();
  ASSERT_GE(kernels.size(), 2u) << "no SIMD kernel runs on this CPU";
  for (const auto* kernel : kernels) {
    if (!Family::exact_on(*kernel, c)) continue;
    for (ThreadPool* pool : {&one, &three}) {
      const auto y = Family::run(c, data, *kernel, *pool);
      ASSERT_TRUE(
          same_bits(reference, y, data.ldy,
                    Family::name(*kernel) + " with " + std::to_string(pool->size()) + " threads"));
    }
  }
}

// What y holds before an accumulating matmul: values of the outputs' magnitudes, some zero, in
// the rows (the padding keeps the runners' sentinel).
std::vector<float> earlier_output(int64_t m, int64_t n, int64_t ldy) {
  std::vector<float> y(static_cast<size_t>(m * ldy), -777.0f);
  std::mt19937 rng(static_cast<uint32_t>(m * 7919 + n));
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t col = 0; col < n; ++col)
      y[static_cast<size_t>(r * ldy + col)] = (r + col) % 7 == 0 ? 0.0f : value(rng);
  return y;
}

template <class Family>
void expect_every_kernel_accumulates_bit_exact(const typename Family::Case& c) {
  const auto data = Family::data(c);
  const std::vector<float> before = earlier_output(c.m, c.n, data.ldy);
  ThreadPool one(1), three(3);
  for (const auto* kernel : Family::kernels()) {
    for (ThreadPool* pool : {&one, &three}) {
      const auto stored = Family::run(c, data, *kernel, *pool);
      std::vector<float> expected = before;
      for (int64_t r = 0; r < c.m; ++r)
        for (int64_t col = 0; col < c.n; ++col) {
          const size_t i = static_cast<size_t>(r * data.ldy + col);
          expected[i] = before[i] + stored[i];
        }
      const auto y = Family::run(c, data, *kernel, *pool, &before);
      ASSERT_TRUE(same_bits(expected, y, data.ldy,
                            Family::name(*kernel) + " accumulating, with " +
                                std::to_string(pool->size()) + " threads"));
    }
  }
}

template <class Family>
void expect_output_padding_untouched() {
  int strided_cases = 0;
  ThreadPool pool(2);
  for (const auto& c : Family::cases()) {
    if (c.ldy_pad == 0) continue;
    ++strided_cases;
    const auto data = Family::data(c);
    for (const auto* kernel : Family::kernels()) {
      const auto y = Family::run(c, data, *kernel, pool);
      ASSERT_TRUE(padding_untouched(y, c.m, c.n, data.ldy, -777.0f,
                                    Family::name(*kernel) + " " + c.name()));
    }
  }
  EXPECT_GT(strided_cases, 0);
}

const auto case_name = [](const auto& info) { return info.param.name(); };

class W4A8Exact : public ::testing::TestWithParam<W4A8Case> {};
TEST_P(W4A8Exact, EveryKernelMatchesReferenceBitForBit) {
  expect_every_kernel_bit_exact<W4A8Family>(GetParam());
}
TEST_P(W4A8Exact, EveryKernelAccumulatesItsOutputBitForBit) {
  expect_every_kernel_accumulates_bit_exact<W4A8Family>(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Cases, W4A8Exact, ::testing::ValuesIn(w4a8_cases()), case_name);
TEST(W4A8Strides, OutputPaddingBetweenRowsIsUntouched) {
  expect_output_padding_untouched<W4A8Family>();
}

class W4A16Exact : public ::testing::TestWithParam<W4A8Case> {};
TEST_P(W4A16Exact, EveryKernelMatchesReferenceBitForBit) {
  expect_every_kernel_bit_exact<W4A16Family>(GetParam());
}
TEST_P(W4A16Exact, EveryKernelAccumulatesItsOutputBitForBit) {
  expect_every_kernel_accumulates_bit_exact<W4A16Family>(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Cases, W4A16Exact, ::testing::ValuesIn(w4a8_cases()), case_name);
TEST(W4A16Strides, OutputPaddingBetweenRowsIsUntouched) {
  expect_output_padding_untouched<W4A16Family>();
}

class DenseExact : public ::testing::TestWithParam<DenseCase> {};
TEST_P(DenseExact, EveryExactKernelMatchesReferenceBitForBit) {
  expect_every_kernel_bit_exact<DenseFamily>(GetParam());
}
TEST_P(DenseExact, EveryKernelAccumulatesItsOutputBitForBit) {
  expect_every_kernel_accumulates_bit_exact<DenseFamily>(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Cases, DenseExact, ::testing::ValuesIn(dense_cases()), case_name);
TEST(DenseStrides, OutputPaddingBetweenRowsIsUntouched) {
  expect_output_padding_untouched<DenseFamily>();
}

}  // namespace
}  // namespace dq4::test
