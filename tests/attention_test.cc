// The attention family: every variant this CPU runs equals the reference bit for bit (at 1, 2
// and 3 threads), the reference is close to softmax attention in f64, and scores far beyond
// e^88 stay finite.

#include <gtest/gtest.h>

#include <cmath>

#include "attention_test_support.h"
#include "bit_exact.h"

namespace dq4::test {
namespace {

const attention::Kernel& reference() { return *attention::family().find("reference"); }

::testing::AssertionResult attention_padding_untouched(const AttentionCase& c,
                                                       const AttentionData& d,
                                                       const std::vector<float>& out) {
  for (int64_t i = 0; i < c.tokens; ++i)
    for (int64_t k = c.num_heads() * c.head_dim; k < d.ld; ++k)
      if (out[i * d.ld + k] != kOutFill)
        return ::testing::AssertionFailure() << c.name() << ": wrote padding of row " << i;
  return ::testing::AssertionSuccess();
}

TEST(AttentionExact, EveryVariantMatchesTheReferenceAtAnyThreadCount) {
  for (const AttentionCase& c : attention_cases()) {
    const AttentionData d = make_attention_data(c);
    AttentionCase single = c;
    single.threads = 1;
    const std::vector<float> want = run_attention(single, d, reference());
    for (const attention::Kernel* kernel : runnable_attention_kernels()) {
      const std::vector<float> got = run_attention(c, d, *kernel);
      ASSERT_TRUE(same_bits(want, got, d.ld,
                            std::string(attention::family().name(*kernel)) + " " + c.name()));
      ASSERT_TRUE(attention_padding_untouched(c, d, got));
    }
  }
}

TEST(AttentionExact, ABatchOfSequencesEqualsOneCallEach) {
  // Mixed sequences in one run_batch (decode rows, prefill chunks with a cached prefix, several
  // head shapes): each sequence's output equals its own run() bit for bit, at 1, 2 and 3 threads.
  std::vector<AttentionCase> cases;
  for (const AttentionCase& c : attention_cases())
    if (cases.size() < 24 && c.threads == 1) cases.push_back(c);
  ASSERT_GE(cases.size(), 8u);
  std::vector<AttentionData> data;
  for (size_t i = 0; i < cases.size(); ++i)
    data.push_back(make_attention_data(cases[i], static_cast<uint32_t>(i + 1)));
  for (const attention::Kernel* kernel : runnable_attention_kernels())
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      std::vector<std::vector<float>> outs;
      std::vector<attention::Args> batch;
      for (size_t i = 0; i < cases.size(); ++i)
        outs.emplace_back(static_cast<size_t>(cases[i].tokens * data[i].ld), kOutFill);
      for (size_t i = 0; i < cases.size(); ++i) {
        batch.push_back(data[i].args(cases[i], outs[i].data()));
        batch.back().pool = &pool;
      }
      attention::run_batch(batch, *kernel);
      for (size_t i = 0; i < cases.size(); ++i) {
        const std::vector<float> want = run_attention(cases[i], data[i], *kernel);
        ASSERT_TRUE(same_bits(want, outs[i], data[i].ld,
                              std::string(attention::family().name(*kernel)) + " batched " +
                                  cases[i].name() + " threads " + std::to_string(threads)));
      }
    }
}

// The reference's error against f64, to first order: each weight is off by at most
// 4 score_error (its own score's and, through the max and the sum, the others') + 2 exp_approx
// errors (1.23 ulp measured over [-87, 0]; 4 ulp allowed) + the roundings of s_j - m, the sum
// and the division; the weighted sum of values by one rounding per key.
TEST(AttentionAccuracy, ReferenceIsCloseToSoftmaxInF64) {
  for (const AttentionCase& c : attention_cases()) {
    const AttentionData d = make_attention_data(c);
    const std::vector<float> out = run_attention(c, d, reference());
    for (int64_t i = 0; i < c.tokens; ++i)
      for (int64_t h = 0; h < c.num_heads(); ++h) {
        const ExactAttention e = exact_attention(c, d, i, h);
        const double u = 0x1p-24;
        const double relative = 4 * e.score_error + 2 * 0x1p-22 + 2 * u * e.spread +
                                (2.0 * static_cast<double>(e.keys) + 16) * u;
        for (int64_t k = 0; k < c.head_dim; ++k) {
          const float got = out[i * d.ld + h * c.head_dim + k];
          ASSERT_LE(std::fabs(got - e.value[k]), 1.5 * relative * e.magnitude[k] + 1e-30)
              << c.name() << " row " << i << " head " << h << " dim " << k << ": " << got << " vs "
              << e.value[k];
        }
      }
  }
}

TEST(AttentionAccuracy, ScoresBeyondExpOverflowStayFinite) {
  int checked = 0;
  for (const AttentionCase& c : attention_cases()) {
    if (c.magnitude < 10) continue;
    const AttentionData d = make_attention_data(c);
    for (const attention::Kernel* kernel : runnable_attention_kernels()) {
      const std::vector<float> out = run_attention(c, d, *kernel);
      for (int64_t i = 0; i < c.tokens; ++i)
        for (int64_t k = 0; k < c.num_heads() * c.head_dim; ++k)
          ASSERT_TRUE(std::isfinite(out[i * d.ld + k]))
              << attention::family().name(*kernel) << " " << c.name() << " row " << i;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace dq4::test
