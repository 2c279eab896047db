// Sampling: greedy, seeds, truncation (top-k, top-p, min-p), penalties, log-probabilities.

#include "dq4/engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "expect_error.h"
#include "sanitized_build.h"

namespace dq4 {
namespace {

std::vector<int32_t> draws(SamplingParams p, const std::vector<float>& logits, int n) {
  Sampler s(p);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    std::vector<float> row = logits;
    out.push_back(s.sample_at(static_cast<uint64_t>(i), row, {}, {}));
  }
  return out;
}

const std::vector<float> kLogits = {1.0f, 3.0f, 2.0f, 0.5f, 3.0f, -1.0f};

TEST(Sampler, GreedyTakesTheLowestIdOfTheMax) {
  SamplingParams p;
  p.temperature = 0;
  EXPECT_EQ(draws(p, kLogits, 3), (std::vector<int32_t>{1, 1, 1}));
}

TEST(Sampler, GreedyOverAVocabularyFindsTheFirstMaxInEveryPosition) {
  SamplingParams p;
  p.temperature = 0;
  const float nan = std::nanf("");
  // Sizes around the 16 lanes of the search; the maximum at every position, once and twice.
  for (size_t vocab : {1, 15, 16, 17, 33, 1000}) {
    for (size_t at = 0; at < vocab; at += (vocab > 40 ? 37 : 1)) {
      std::vector<float> logits(vocab);
      for (size_t i = 0; i < vocab; ++i) logits[i] = -static_cast<float>((i * 7919) % 101);
      logits[at] = 5.0f;
      EXPECT_EQ(draws(p, logits, 1)[0], static_cast<int32_t>(at)) << vocab << " " << at;
      if (at + 1 < vocab) {
        logits[vocab - 1] = 5.0f;          // a later tie loses
        if (at > 0) logits[at - 1] = nan;  // NaN never wins
        EXPECT_EQ(draws(p, logits, 1)[0], static_cast<int32_t>(at)) << vocab << " " << at;
      }
    }
  }
  EXPECT_EQ(draws(p, std::vector<float>(40, nan), 1)[0], 0);
  EXPECT_EQ(draws(p, std::vector<float>(40, -INFINITY), 1)[0], 0);
}

// The truncated distribution computed the plain way: every token's probability, sorted, top-k,
// top-p, min-p in that order, normalized.
std::vector<double> truncated(const std::vector<float>& logits, const SamplingParams& p) {
  const size_t n = logits.size();
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>(i);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  size_t keep = p.top_k > 0 ? std::min<size_t>(n, p.top_k) : n;
  std::vector<double> prob(n, 0.0);
  double total = 0;
  for (size_t i = 0; i < keep; ++i)
    total += prob[ids[i]] = std::exp((logits[ids[i]] - logits[ids[0]]) / p.temperature);
  double mass = 0;
  size_t cut = 0;
  while (cut < keep && (cut == 0 || mass < p.top_p * total)) mass += prob[ids[cut++]];
  keep = cut;
  cut = 1;
  while (cut < keep && prob[ids[cut]] >= p.min_p * prob[ids[0]]) ++cut;
  keep = cut;
  std::vector<double> out(n, 0.0);
  double kept = 0;
  for (size_t i = 0; i < keep; ++i) kept += prob[ids[i]];
  for (size_t i = 0; i < keep; ++i) out[ids[i]] = prob[ids[i]] / kept;
  return out;
}

TEST(Sampler, LargeVocabularyTruncationMatchesThePlainComputation) {
  // 3000 tokens whose weights span e^0 to e^-150 at T = 1: the top-k / top-p prefix needs ranks
  // far below the first spread the sampler looks at, and some tokens underflow to 0.
  std::vector<float> logits(3000);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> spread(-150.0f, 0.0f);
  for (float& l : logits) l = spread(rng);
  for (int i = 0; i < 12; ++i) logits[static_cast<size_t>(i * 211)] = -0.5f * i;  // a head
  struct Case {
    float temperature, top_p, min_p;
    int top_k;
  };
  for (const Case c :
       {Case{1.0f, 1.0f, 0.0f, 0}, Case{1.0f, 0.999999f, 0.0f, 0}, Case{3.0f, 0.9999f, 0.0f, 0},
        Case{20.0f, 0.7f, 0.0f, 0}, Case{20.0f, 1.0f, 0.0f, 700}, Case{20.0f, 0.8f, 0.0f, 2500},
        Case{5.0f, 1.0f, 0.05f, 0}, Case{50.0f, 0.95f, 0.2f, 900}}) {
    SamplingParams p;
    p.temperature = c.temperature;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    p.top_k = c.top_k;
    p.seed = 11;
    const std::vector<double> want = truncated(logits, p);
    const int draws_n = test::cases_to_draw(20000);
    std::vector<int> seen(logits.size(), 0);
    for (int32_t t : draws(p, logits, draws_n)) ++seen[static_cast<size_t>(t)];
    // Tokens expected 20 times or more one by one; the rarer ones as one bucket.
    double worst = 0, rare_want = 0, rare_seen = 0;
    const auto z = [&](double want_p, double seen_n) {
      return std::fabs(seen_n / draws_n - want_p) / std::sqrt(want_p * (1 - want_p) / draws_n);
    };
    for (size_t i = 0; i < logits.size(); ++i) {
      if (want[i] == 0) {
        EXPECT_EQ(seen[i], 0) << "token " << i << " outside the kept set, T " << c.temperature;
      } else if (want[i] * draws_n >= 20) {
        worst = std::max(worst, z(want[i], seen[i]));
      } else {
        rare_want += want[i];
        rare_seen += seen[i];
      }
    }
    if (rare_want * draws_n >= 20) worst = std::max(worst, z(rare_want, rare_seen));
    EXPECT_LT(worst, 5.0) << "T " << c.temperature << " top_p " << c.top_p << " top_k " << c.top_k;
  }
}

TEST(Sampler, TruncationReachesIntoAFlatTailInIdOrder) {
  // One token at 0 and 2999 tied at -11.5 (each e^-11.5 of the top one, 3 % together): top-p
  // 0.99 keeps the top and the ~1970 lowest ids of the tail (ties: lower id first), far below
  // the first spread the sampler ranks.
  std::vector<float> logits(3000, -11.5f);
  logits[1234] = 0.0f;
  SamplingParams p;
  p.top_p = 0.99f;
  p.seed = 5;
  const std::vector<double> want = truncated(logits, p);
  int tail_seen = 0;
  double tail_want = 0;
  for (size_t i = 0; i < logits.size(); ++i)
    if (i != 1234) tail_want += want[i];
  const int n = test::cases_to_draw(20000);
  for (int32_t t : draws(p, logits, n)) {
    ASSERT_GT(want[static_cast<size_t>(t)], 0) << "token " << t << " is past the top-p prefix";
    tail_seen += t != 1234;
  }
  ASSERT_GT(tail_want, 0.01);
  EXPECT_NEAR(tail_seen / double(n), tail_want, 5 * std::sqrt(tail_want / n));

  // top-k 300 of the same: the top and the 299 lowest ids of the tail (0.09 % each of 1 + 0.3 %).
  p.top_p = 1.0f;
  p.top_k = 300;
  const std::vector<double> want_k = truncated(logits, p);
  tail_seen = 0;
  for (int32_t t : draws(p, logits, n)) {
    ASSERT_GT(want_k[static_cast<size_t>(t)], 0) << "token " << t << " is not in the top-k";
    tail_seen += t != 1234;
  }
  EXPECT_GT(tail_seen, 0);
}

TEST(Sampler, SameSeedSameTokens) {
  SamplingParams p;
  p.seed = 42;
  const auto a = draws(p, kLogits, 200), b = draws(p, kLogits, 200);
  EXPECT_EQ(a, b);
  p.seed = 43;
  EXPECT_NE(draws(p, kLogits, 200), a);
}

TEST(Sampler, APositionsDrawDependsOnTheSeedAndThePositionAlone) {
  // What speculative decoding relies on: the token at position p comes out the same whether the
  // positions before it were drawn by this sampler, by another, or not at all.
  SamplingParams p;
  p.seed = 42;
  const auto all = draws(p, kLogits, 64);
  Sampler fresh(p);
  for (uint64_t pos : {63u, 17u, 0u, 17u}) {
    std::vector<float> row = kLogits;
    EXPECT_EQ(fresh.sample_at(pos, row, {}, {}), all[pos]) << pos;
  }
  // sample() draws at the position that follows the generated tokens.
  std::vector<float> row = kLogits;
  const std::vector<int32_t> generated(17, 0);
  EXPECT_EQ(fresh.sample(row, {}, generated), all[17]);
}

TEST(Sampler, FollowsTheDistribution) {
  SamplingParams p;
  p.seed = 7;
  const int n = 60000;
  const auto d = draws(p, kLogits, n);
  double z = 0;
  for (float l : kLogits) z += std::exp(l);
  for (size_t t = 0; t < kLogits.size(); ++t) {
    const double want = std::exp(kLogits[t]) / z;
    const double got = static_cast<double>(std::count(d.begin(), d.end(), t)) / n;
    EXPECT_NEAR(got, want, 5 * std::sqrt(want * (1 - want) / n) + 1e-4) << t;
  }
}

// Pearson's chi-square of token counts against probabilities, and its degrees of freedom (the
// tokens of positive probability, less one). A count where the probability is 0: infinite.
struct ChiSquare {
  double statistic = 0;
  int df = -1;
};
ChiSquare chi_square(const std::vector<int>& counts, const std::vector<double>& prob) {
  ChiSquare c;
  const double n = std::accumulate(counts.begin(), counts.end(), 0.0);
  for (size_t t = 0; t < prob.size(); ++t) {
    if (prob[t] == 0) {
      if (counts[t] > 0) c.statistic = std::numeric_limits<double>::infinity();
      continue;
    }
    const double want = n * prob[t];
    c.statistic += (counts[t] - want) * (counts[t] - want) / want;
    ++c.df;
  }
  return c;
}
// The chi-square distribution's quantile at 1 - 1e-6 for 1..7 degrees of freedom: a correct
// sampler exceeds it once in a million seeds. The seeds are fixed, so a test passes or fails the
// same way every run; it can fail only on a wrong distribution.
double chi_square_limit(int df) {
  static const double limits[] = {23.93, 27.63, 30.66, 33.38, 35.89, 38.26, 40.52};
  EXPECT_TRUE(df >= 1 && df <= 7) << df;
  return limits[std::clamp(df, 1, 7) - 1];
}

const std::vector<float> kEightLogits = {1.0f, 3.0f, 2.0f, 0.5f, 3.0f, -1.0f, 2.5f, 0.0f};

// Rejection sampling of a draft at positions 0..n-1: the tokens committed per id, and how many
// drafts stood. With `q`, each position's draft is drawn from q (a fixed generator), else it is
// `draft`, a point mass.
struct Verified {
  std::vector<int> counts;
  int accepted = 0;
};
Verified verify_many(const SamplingParams& p, int32_t draft, const std::vector<float>& q, int n,
                     bool resample_from_p = false) {
  Sampler s(p), plain(p);
  std::mt19937_64 gen(2026);
  std::discrete_distribution<int32_t> from_q(q.begin(), q.end());
  Verified v;
  v.counts.assign(kEightLogits.size(), 0);
  for (int i = 0; i < n; ++i) {
    std::vector<float> row = kEightLogits;
    const int32_t d = q.empty() ? draft : from_q(gen);
    Sampler::Verdict verdict = s.verify_at(static_cast<uint64_t>(i), d, q, row, {}, {});
    // The classic mistake (for the test of the test): a rejected draft replaced by a draw from p
    // itself rather than from the residual, which favours the draft.
    if (resample_from_p && !verdict.accepted) {
      row = kEightLogits;
      verdict.token = plain.sample_at(static_cast<uint64_t>(i), row, {}, {});
    }
    ++v.counts[static_cast<size_t>(verdict.token)];
    v.accepted += verdict.accepted;
  }
  return v;
}

TEST(Sampler, RejectionSamplingCommitsTheTargetDistribution) {
  SamplingParams truncating;  // keeps tokens 1, 4, 6 and 2
  truncating.temperature = 0.8f;
  truncating.top_k = 6;
  truncating.top_p = 0.9f;
  truncating.seed = 11;
  SamplingParams hot;  // every token
  hot.temperature = 1.3f;
  hot.seed = 12;
  SamplingParams top3 = hot;
  top3.top_k = 3;
  const std::vector<float> q = {0.05f, 0.1f, 0.3f, 0.05f, 0.1f, 0.2f, 0.1f, 0.1f};
  struct Case {
    SamplingParams params;
    int32_t draft;  // a point mass, or -1: drafts drawn from q
  };
  const int n = 20000;
  // Point masses: a likely draft, an unlikely one, one truncated away (never accepted); then a
  // draft distribution, over every token and over more tokens than top-k keeps.
  for (const Case& c : {Case{truncating, 6}, Case{truncating, 2}, Case{truncating, 0},
                        Case{hot, -1}, Case{top3, -1}}) {
    const std::vector<double> want = truncated(kEightLogits, c.params);
    const Verified v = verify_many(c.params, c.draft, c.draft < 0 ? q : std::vector<float>{}, n);
    const ChiSquare x = chi_square(v.counts, want);
    EXPECT_LT(x.statistic, chi_square_limit(x.df))
        << "draft " << c.draft << " T " << c.params.temperature;
    if (c.draft >= 0) {
      // A point mass stands with probability p(draft): the accepted count is binomial.
      const double p = want[static_cast<size_t>(c.draft)];
      const ChiSquare a = chi_square({v.accepted, n - v.accepted}, {p, 1 - p});
      EXPECT_LT(a.statistic, chi_square_limit(1)) << "draft " << c.draft;
    }
  }
  // The test tells a wrong rejection sampler from a right one: resampling from p on rejection
  // commits the draft (p = 0.19) a third of the time.
  const Verified wrong = verify_many(truncating, 6, {}, n, true);
  const ChiSquare x = chi_square(wrong.counts, truncated(kEightLogits, truncating));
  EXPECT_GT(x.statistic, chi_square_limit(x.df));
}

TEST(Sampler, RejectionSamplingUnderGreedyIsTheArgmaxAndTheRightShapeOfQ) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p);
  std::vector<float> row = kEightLogits;
  EXPECT_TRUE(s.verify_at(0, 1, {}, row, {}, {}).accepted);
  row = kEightLogits;
  const Sampler::Verdict v = s.verify_at(0, 4, {}, row, {}, {});  // the tie's higher id
  EXPECT_FALSE(v.accepted);
  EXPECT_EQ(v.token, 1);
  p.temperature = 1;
  Sampler t(p);
  row = kEightLogits;
  test::expect_error([&] { t.verify_at(0, 1, std::vector<float>(3, 0.3f), row, {}, {}); },
                     "draft's distribution");
}

TEST(Sampler, TruncationKeepsOnlyTheAllowedTokens) {
  SamplingParams p;
  p.seed = 1;
  p.top_k = 2;  // the two 3.0 logits
  for (int32_t t : draws(p, kLogits, 300)) EXPECT_TRUE(t == 1 || t == 4) << t;
  p.top_k = 0;
  p.top_p = 0.5f;  // tokens 1 and 4 hold ~0.64 together; 1 alone ~0.32
  for (int32_t t : draws(p, kLogits, 300)) EXPECT_TRUE(t == 1 || t == 4) << t;
  p.top_p = 1.0f;
  p.min_p = 0.5f;  // exp(2 - 3) = 0.37 < 0.5: only the two top tokens
  for (int32_t t : draws(p, kLogits, 300)) EXPECT_TRUE(t == 1 || t == 4) << t;
  p.min_p = 0.3f;  // token 2 (0.37) joins
  const auto d = draws(p, kLogits, 600);
  EXPECT_GT(std::count(d.begin(), d.end(), 2), 0);
  for (int32_t t : d) EXPECT_TRUE(t == 1 || t == 4 || t == 2) << t;
}

TEST(Sampler, Penalties) {
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 2.0f;
  Sampler s(p);
  std::vector<float> row = kLogits;
  const std::vector<int32_t> prompt = {1}, generated = {4};
  // 3 / 2 for both 1 and 4: token 2 (2.0) wins.
  EXPECT_EQ(s.sample(row, prompt, generated), 2);
  EXPECT_FLOAT_EQ(row[1], 1.5f);
  SamplingParams q;
  q.temperature = 0;
  q.presence_penalty = 0.5f;
  q.frequency_penalty = 0.4f;
  Sampler t(q);
  row = kLogits;
  const std::vector<int32_t> twice = {1, 1};
  // Token 1: 3 - 0.5 - 0.8 = 1.7; token 4 keeps 3 and wins; the prompt does not count.
  EXPECT_EQ(t.sample(row, prompt, twice), 4);
  EXPECT_FLOAT_EQ(row[1], 1.7f);
}

TEST(Sampler, PenaltiesCountEachCallAfresh) {
  // One sampler for a whole sequence: what it counted for one row never leaks into the next.
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 1.5f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.4f;
  Sampler reused(p);
  const std::vector<int32_t> prompt = {0, 3}, generated = {1, 1, 4, 7, -2};
  for (int call = 0; call < 3; ++call) {
    std::vector<float> row = kLogits, fresh_row = kLogits;
    Sampler fresh(p);
    EXPECT_EQ(reused.sample(row, prompt, generated), fresh.sample(fresh_row, prompt, generated));
    EXPECT_EQ(row, fresh_row) << "call " << call;
  }
  std::vector<float> row = kLogits;
  reused.sample(row, {}, {});
  EXPECT_EQ(row, kLogits);  // nothing seen, nothing penalized
}

TEST(Sampler, Logprobs) {
  double z = 0;
  for (float l : kLogits) z += std::exp(static_cast<double>(l));
  EXPECT_NEAR(token_logprob(kLogits, 2), 2.0 - std::log(z), 1e-6);
  EXPECT_NEAR(log_sum_exp(kLogits), std::log(z), 1e-6);
  const auto top = top_logprobs(kLogits, 3, log_sum_exp(kLogits));
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].token, 1);
  EXPECT_EQ(top[1].token, 4);
  EXPECT_EQ(top[2].token, 2);
  EXPECT_NEAR(top[0].logprob, 3.0 - std::log(z), 1e-6);
}

TEST(Sampler, LogprobsOfALargeVocabularyMatchThePlainComputation) {
  // 50000 logits with ties and a NaN: the top 20 by a full sort (ties: lower id first), and
  // log-sum-exp in double, to 1e-5.
  std::vector<float> logits(50000);
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> level(-4000, 400);
  for (float& l : logits) l = static_cast<float>(level(rng)) / 100.0f;
  logits[777] = std::numeric_limits<float>::quiet_NaN();
  logits[3] = std::numeric_limits<float>::quiet_NaN();  // among the first 20 looked at
  double max = -1e30, z = 0;
  for (float l : logits)
    if (!std::isnan(l)) max = std::max<double>(max, l);
  for (float l : logits)
    if (!std::isnan(l)) z += std::exp(l - max);
  const double lse = max + std::log(z);
  EXPECT_NEAR(log_sum_exp(logits), lse, 1e-5);
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < static_cast<int32_t>(logits.size()); ++i)
    if (i != 777 && i != 3) ids.push_back(i);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  const auto top = top_logprobs(logits, 20, lse);
  ASSERT_EQ(top.size(), 20u);
  for (size_t i = 0; i < top.size(); ++i) {
    EXPECT_EQ(top[i].token, ids[i]) << "rank " << i;
    EXPECT_NEAR(top[i].logprob, logits[ids[i]] - lse, 1e-5);
  }
  EXPECT_TRUE(top_logprobs(logits, 0, lse).empty());
}

TEST(Sampler, RefusesBadParameters) {
  SamplingParams p;
  p.temperature = -1;
  test::expect_error([&] { Sampler s(p); }, "temperature");
  p = {};
  p.top_p = 0;
  test::expect_error([&] { Sampler s(p); }, "top_p");
  p = {};
  p.min_p = 2;
  test::expect_error([&] { Sampler s(p); }, "min_p");
  p = {};
  p.repetition_penalty = 0;
  test::expect_error([&] { Sampler s(p); }, "repetition_penalty");
  p = {};
  p.presence_penalty = 3;
  test::expect_error([&] { Sampler s(p); }, "presence_penalty");
}

}  // namespace
}  // namespace dq4
