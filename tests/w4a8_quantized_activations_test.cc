// Activations quantized once (w4a8::quantize_activations) and multiplied by several weights give
// the very bits matmul() gives on the f32 rows, for every kernel, group size and thread count.

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "bit_exact.h"
#include "expect_error.h"
#include "w4a8_test_support.h"

namespace dq4::test {
namespace {

w4a8::MatmulArgs output_args(const W4A8Case& c, const W4A8Data& d, std::vector<float>& y,
                             ThreadPool& pool) {
  y.assign(static_cast<size_t>(c.m * d.ldy), -777.0f);
  w4a8::MatmulArgs args;
  args.m = c.m;
  args.y = y.data();
  args.ldy = d.ldy;
  args.min = c.lo;
  args.max = c.hi;
  args.pool = &pool;
  return args;
}

TEST(W4A8QuantizedActivations, MatchMatmulOnTheF32RowsForEveryKernelAndThreadCount) {
  ThreadPool one(1), three(3);
  int checked = 0;
  for (const W4A8Case& c : w4a8_cases()) {
    if (c.m != 1 && c.m != 5 && c.m != 17 && c.m != 64 && c.m != 129) continue;
    const W4A8Data d = make_data(c);
    for (const w4a8::Kernel* kernel : runnable_kernels()) {
      const w4a8::PackedWeights w = w4a8::pack(d.source(c), *kernel);
      for (ThreadPool* pool : {&one, &three}) {
        const std::vector<float> expected = run_w4a8(c, d, *kernel, *pool);
        w4a8::QuantizedActivations x;
        w4a8::quantize_activations(d.x.data(), c.m, c.k, d.ldx, x, pool, 0, kernel);
        std::vector<float> y;
        w4a8::matmul(w, x, output_args(c, d, y, *pool));
        ASSERT_TRUE(same_bits(expected, y, d.ldy,
                              c.name() + " " + std::string(w4a8::family().name(*kernel)) + " " +
                                  std::to_string(pool->size()) + " threads"));
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

// Activations quantized by one kernel serve the weights of any other (the quantizers fill what
// some kernels alone read, such as the AVX2 group-32 lane corrections, each in its own way).
TEST(W4A8QuantizedActivations, AnyKernelsActivationsServeEveryKernel) {
  ThreadPool pool(2);
  int checked = 0;
  for (const W4A8Case& c : w4a8_cases()) {
    if (c.m != 5 && c.m != 17) continue;
    const W4A8Data d = make_data(c);
    for (const w4a8::Kernel* quantizer : runnable_kernels()) {
      w4a8::QuantizedActivations x;
      w4a8::quantize_activations(d.x.data(), c.m, c.k, d.ldx, x, &pool, 0, quantizer);
      for (const w4a8::Kernel* kernel : runnable_kernels()) {
        if (kernel == quantizer) continue;
        const w4a8::PackedWeights w = w4a8::pack(d.source(c), *kernel);
        std::vector<float> y;
        w4a8::matmul(w, x, output_args(c, d, y, pool));
        ASSERT_TRUE(same_bits(run_w4a8(c, d, *kernel, pool), y, d.ldy,
                              c.name() + " quantized by " +
                                  std::string(w4a8::family().name(*quantizer)) + ", run by " +
                                  std::string(w4a8::family().name(*kernel))));
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 20);
}

// One quantized input for weights of every group size (partial last groups included), reused.
TEST(W4A8QuantizedActivations, OneInputServesEveryGroupSize) {
  ThreadPool pool(2);
  const W4A8Case base{9, 70, 300, 0, true, int4::ScaleType::bf16};
  const W4A8Data input = make_data(base, 7);
  for (const w4a8::Kernel* kernel : runnable_kernels()) {
    w4a8::QuantizedActivations x;
    w4a8::quantize_activations(input.x.data(), base.m, base.k, input.ldx, x, &pool);
    for (int64_t group : {0, 32, 64, 128, 256, 300}) {
      W4A8Case c = base;
      c.group = group;
      W4A8Data d = make_data(c, 11);
      d.x = input.x;  // the same input for every group size
      const w4a8::PackedWeights w = w4a8::pack(d.source(c), *kernel);
      std::vector<float> y;
      w4a8::matmul(w, x, output_args(c, d, y, pool));
      ASSERT_TRUE(
          same_bits(run_w4a8(c, d, *kernel, pool), y, d.ldy,
                    std::string(w4a8::family().name(*kernel)) + " group " + std::to_string(group)));
    }
  }
}

TEST(W4A8QuantizedActivations, RowsAreWhatQuantizeRowReturns) {
  const W4A8Case c{5, 16, 172, 0};
  const W4A8Data d = make_data(c);
  for (const w4a8::Kernel* kernel : runnable_kernels()) {
    w4a8::QuantizedActivations x;
    w4a8::quantize_activations(d.x.data(), c.m, c.k, d.ldx, x, nullptr, 0, kernel);
    ASSERT_EQ(x.m(), c.m);
    ASSERT_EQ(x.k(), c.k);
    for (int64_t r = 0; r < c.m; ++r) {
      const w4a8::QuantizedRow expected = w4a8::quantize_row(d.x.data() + r * d.ldx, c.k);
      const w4a8::QuantizedRow got = x.row(r);
      EXPECT_EQ(got.q, expected.q) << w4a8::family().name(*kernel) << " row " << r;
      EXPECT_EQ(got.zero_point, expected.zero_point);
      EXPECT_EQ(got.recip_scale, expected.recip_scale);
    }
  }
}

// Every quantizer finds a NaN or an infinity wherever it sits in a row: in the vector loops' body,
// in their tail, next to the end of a row of any length, and names the first row holding one.
TEST(W4A8QuantizedActivations, EveryKernelFindsANonFiniteValueAnywhere) {
  const float bad_values[] = {std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity()};
  int checked = 0;
  for (const w4a8::Kernel* kernel : runnable_kernels())
    for (int64_t k : {1, 15, 33, 64, 100, 200}) {
      const W4A8Case c{3, 16, k, 0};
      W4A8Data d = make_data(c);
      for (int64_t at = 0; at < k; ++at)
        for (float bad : bad_values) {
          const float kept = d.x[1 * d.ldx + at];
          d.x[1 * d.ldx + at] = bad;
          d.x[2 * d.ldx + (k - 1 - at)] = bad;
          w4a8::QuantizedActivations x;
          expect_error(
              [&] { w4a8::quantize_activations(d.x.data(), 3, k, d.ldx, x, nullptr, 0, kernel); },
              "activation row 1 holds a NaN or infinite value");
          d.x[1 * d.ldx + at] = kept;
          d.x[2 * d.ldx + (k - 1 - at)] = 0.5f;
          ++checked;
        }
    }
  EXPECT_GT(checked, 1000);
}

TEST(W4A8QuantizedActivations, BadArgumentsAreClearErrors) {
  const W4A8Case c{3, 16, 64, 32};
  W4A8Data d = make_data(c);
  const w4a8::PackedWeights w = w4a8::pack(d.source(c));
  ThreadPool pool(1);
  std::vector<float> y;
  const w4a8::MatmulArgs args = output_args(c, d, y, pool);
  w4a8::QuantizedActivations x;
  expect_error([&] { w4a8::matmul(w, x, args); }, "not quantized");
  expect_error([&] { w4a8::quantize_activations(nullptr, 3, 64, 64, x); }, "x is null");
  expect_error([&] { w4a8::quantize_activations(d.x.data(), 3, 64, 63, x); },
               "ldx 63 is smaller than k 64");
  w4a8::quantize_activations(d.x.data(), 2, 64, 64, x);
  expect_error([&] { w4a8::matmul(w, x, args); }, "m 3 differs from the 2 rows");
  w4a8::quantize_activations(d.x.data(), 3, 32, 64, x);
  expect_error([&] { w4a8::matmul(w, x, args); }, "the activations have k 32, the weights k 64");
  d.x[2 * d.ldx + 5] = std::numeric_limits<float>::infinity();
  expect_error([&] { w4a8::quantize_activations(d.x.data(), 3, 64, d.ldx, x); },
               {"quantize_activations", "activation row 2 holds a NaN or infinite value"});
  expect_error([&] { w4a8::matmul(w, x, args); }, "not quantized");
  expect_error([&] { (void)x.row(0); }, "row 0 out of [0, 0)");
}

}  // namespace
}  // namespace dq4::test
