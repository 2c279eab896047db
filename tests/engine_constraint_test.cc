// Constrained decoding in the engine, over the fake model with a constraint that allows a fixed
// set of token sequences: masked tokens are never sampled, logprobs are of the masked
// distribution, constrained and unconstrained choices share steps without changing each other,
// every choice has its own matcher, preemption keeps a matcher's place, the constraint can start
// after given tokens, stop strings cut a constrained output, and how a constraint's end meets EOS,
// min_tokens and max_tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "dq4/engine/engine.h"
#include "engine_rig.h"
#include "sequence_set_constraint.h"

namespace dq4 {
namespace {

using test::Collected;
using test::greedy;
using test::kEos;
using test::kVocab;
using test::prompt_of;
using test::Rig;
using test::SequenceSetConstraint;
using test::small_options;

// `count` sequences of random tokens (never EOS), lengths in [1, max_length]; some are prefixes
// of others, so that EOS and a longer sequence compete.
std::vector<std::vector<TokenId>> random_sequences(int count, int max_length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<TokenId> token(3, kVocab - 1);
  std::uniform_int_distribution<int> length(1, max_length);
  std::vector<std::vector<TokenId>> out;
  for (int i = 0; i < count; ++i) {
    std::vector<TokenId> seq;
    if (i % 3 == 2) seq = out[static_cast<size_t>(i) - 1];  // extends its predecessor
    const int n = length(rng);
    for (int k = 0; k < n; ++k) seq.push_back(token(rng));
    out.push_back(std::move(seq));
  }
  return out;
}

std::shared_ptr<const SequenceSetConstraint> set_of(std::vector<std::vector<TokenId>> sequences) {
  return std::make_shared<SequenceSetConstraint>(std::move(sequences), kVocab,
                                                 std::vector<TokenId>{kEos});
}

// The choice's tokens without the EOS that ended it.
std::vector<TokenId> output_of(const Collected::Choice& c) {
  std::vector<TokenId> out = c.tokens;
  if (c.stop_token) out.pop_back();
  return out;
}

bool is_member(const std::vector<TokenId>& tokens, const SequenceSetConstraint& set) {
  const auto& all = set.sequences();
  return std::find(all.begin(), all.end(), tokens) != all.end();
}

Request sampled(std::vector<TokenId> prompt, uint64_t seed, int64_t max_tokens = 64) {
  Request r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 1.0f;
  r.sampling.seed = seed;
  return r;
}

TEST(EngineConstraint, NeverSamplesAForbiddenTokenWhateverTheSampling) {
  Rig rig(small_options(), /*eos_every=*/5);
  const auto set = set_of(random_sequences(30, 10, 1));
  std::vector<uint64_t> ids;
  for (int i = 0; i < 40; ++i) {
    Request r = sampled(prompt_of(3 + i % 7, i), 1000 + i);
    SamplingParams& s = r.sampling;
    s.temperature = i % 8 == 0 ? 0.0f : 2.0f;
    s.top_k = i % 3 == 0 ? 3 : 0;
    s.top_p = i % 4 == 1 ? 0.9f : 1.0f;
    s.min_p = i % 5 == 2 ? 0.1f : 0.0f;
    s.repetition_penalty = i % 2 ? 1.5f : 0.7f;
    s.presence_penalty = i % 2 ? 2.0f : -2.0f;
    s.frequency_penalty = i % 2 ? 2.0f : -2.0f;
    r.constraint = set;
    ids.push_back(rig.engine.add_request(std::move(r), rig.outputs.callback()));
  }
  rig.run();
  std::set<std::vector<TokenId>> distinct;
  for (uint64_t id : ids) {
    const Collected c = rig.outputs.get(id);
    ASSERT_TRUE(c.finished);
    ASSERT_FALSE(c.choices.at(0).tokens.empty());
    const std::vector<TokenId> out = output_of(c.choices.at(0));
    EXPECT_TRUE(is_member(out, *set)) << "request " << id;
    EXPECT_EQ(c.choices.at(0).finish, FinishReason::stop);
    distinct.insert(out);
  }
  EXPECT_GT(distinct.size(), 5u);  // the draws were free within the set
}

TEST(EngineConstraint, LogprobsAreOfTheMaskedDistribution) {
  Rig rig(small_options());
  const auto set = set_of(random_sequences(12, 8, 2));
  Request r = sampled(prompt_of(6, 3), 5);
  r.logprobs = 4;
  r.constraint = set;
  const std::vector<TokenId> prompt = r.prompt;
  const uint64_t id = rig.engine.add_request(std::move(r), rig.outputs.callback());
  rig.run();
  const Collected::Choice c = rig.outputs.get(id).choices.at(0);
  ASSERT_EQ(c.logprobs.size(), c.tokens.size());
  std::vector<TokenId> context = prompt, generated;
  std::vector<float> row(kVocab);
  for (size_t i = 0; i < c.tokens.size(); ++i) {
    rig.model->reference_logits(context, row.data());
    const std::vector<TokenId> allowed = set->allowed_after(generated);
    ASSERT_FALSE(allowed.empty());
    double max = -std::numeric_limits<double>::infinity();
    for (TokenId t : allowed) max = std::max<double>(max, row[t]);
    double sum = 0;
    for (TokenId t : allowed) sum += std::exp(row[t] - max);
    const double lse = max + std::log(sum);
    const TokenLogprobs& lp = c.logprobs[i];
    EXPECT_EQ(lp.chosen.token, c.tokens[i]);
    EXPECT_NEAR(lp.chosen.logprob, row[c.tokens[i]] - lse, 1e-4) << "token " << i;
    std::vector<TokenId> by_logit = allowed;
    std::stable_sort(by_logit.begin(), by_logit.end(),
                     [&](TokenId a, TokenId b) { return row[a] > row[b]; });
    ASSERT_EQ(lp.top.size(), std::min<size_t>(4, allowed.size())) << "token " << i;
    for (size_t k = 0; k < lp.top.size(); ++k) {
      EXPECT_EQ(lp.top[k].token, by_logit[k]) << "token " << i << " top " << k;
      EXPECT_NEAR(lp.top[k].logprob, row[by_logit[k]] - lse, 1e-4);
    }
    context.push_back(c.tokens[i]);
    generated.push_back(c.tokens[i]);
  }
}

// Each request's outputs, run to the end in one engine.
std::vector<Collected> run_all(const std::vector<Request>& requests, EngineOptions options,
                               uint64_t* preemptions = nullptr) {
  Rig rig(options);
  std::vector<uint64_t> ids;
  for (const Request& r : requests)
    ids.push_back(rig.engine.add_request(r, rig.outputs.callback()));
  rig.run();
  std::vector<Collected> out;
  for (uint64_t id : ids) out.push_back(rig.outputs.get(id));
  if (preemptions) *preemptions = rig.engine.stats().preemptions;
  return out;
}

TEST(EngineConstraint, ConstrainedAndUnconstrainedChoicesShareStepsUnchanged) {
  const auto set = set_of(random_sequences(20, 12, 3));
  std::vector<Request> free, constrained;
  for (int i = 0; i < 4; ++i) {
    free.push_back(sampled(prompt_of(5 + i, 10 + i), 20 + i, 12));
    constrained.push_back(sampled(prompt_of(5 + i, 30 + i), 40 + i));
    constrained.back().constraint = set;
  }
  std::vector<Request> mixed;
  for (int i = 0; i < 4; ++i) {
    mixed.push_back(free[static_cast<size_t>(i)]);
    mixed.push_back(constrained[static_cast<size_t>(i)]);
  }
  const std::vector<Collected> alone_free = run_all(free, small_options());
  const std::vector<Collected> alone_constrained = run_all(constrained, small_options());
  const std::vector<Collected> together = run_all(mixed, small_options());
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(together[2 * i].choices.at(0).tokens, alone_free[i].choices.at(0).tokens) << i;
    EXPECT_EQ(together[2 * i + 1].choices.at(0).tokens, alone_constrained[i].choices.at(0).tokens)
        << i;
    EXPECT_TRUE(is_member(output_of(together[2 * i + 1].choices.at(0)), *set)) << i;
    EXPECT_FALSE(is_member(output_of(together[2 * i].choices.at(0)), *set)) << i;
  }
}

TEST(EngineConstraint, EachChoiceHasItsOwnMatcher) {
  const auto set = set_of(random_sequences(20, 12, 4));
  Request r = sampled(prompt_of(7, 5), 70);
  r.sampling.temperature = 1.5f;
  r.constraint = set;
  r.n = 6;
  std::vector<Request> singles;
  for (int i = 0; i < r.n; ++i) {
    singles.push_back(r);
    singles.back().n = 1;
    singles.back().sampling.seed = 70 + i;
  }
  const Collected together = run_all({r}, small_options()).at(0);
  const std::vector<Collected> alone = run_all(singles, small_options());
  ASSERT_EQ(together.choices.size(), 6u);
  std::set<std::vector<TokenId>> distinct;
  for (int i = 0; i < r.n; ++i) {
    const Collected::Choice& c = together.choices.at(i);
    EXPECT_TRUE(is_member(output_of(c), *set)) << "choice " << i;
    EXPECT_EQ(c.tokens, alone[static_cast<size_t>(i)].choices.at(0).tokens) << "choice " << i;
    distinct.insert(c.tokens);
  }
  EXPECT_GT(distinct.size(), 1u);
}

TEST(EngineConstraint, PreemptionKeepsEachMatchersPlace) {
  // Long sequences, so that choices are preempted and recomputed mid-constraint.
  std::vector<std::vector<TokenId>> sequences = random_sequences(6, 30, 5);
  for (auto& seq : sequences) seq.resize(30, 9);
  const auto set = set_of(sequences);
  std::vector<Request> requests;
  for (int i = 0; i < 8; ++i) {
    requests.push_back(sampled(prompt_of(10 + i, i), 80 + i, 40));
    requests.back().constraint = set;
  }
  for (bool caching : {false, true}) {
    EngineOptions tiny = small_options();
    tiny.kv_blocks = 24;  // 96 tokens for 8 sequences of up to 48
    tiny.max_model_len = 96;
    tiny.enable_prefix_caching = caching;
    uint64_t preemptions = 0;
    const std::vector<Collected> squeezed = run_all(requests, tiny, &preemptions);
    const std::vector<Collected> roomy = run_all(requests, small_options());
    EXPECT_GT(preemptions, 0u);
    for (size_t i = 0; i < requests.size(); ++i) {
      const Collected::Choice& c = squeezed[i].choices.at(0);
      EXPECT_EQ(c.tokens, roomy[i].choices.at(0).tokens) << "request " << i;
      EXPECT_TRUE(is_member(output_of(c), *set)) << "request " << i;
    }
  }
}

TEST(EngineConstraint, ASpeculatingEngineLeavesConstrainedChoicesAlone) {
  // Repetitive sequences, which an n-gram proposer would draft from.
  std::vector<std::vector<TokenId>> sequences = {{5, 6, 7, 5, 6, 7, 5, 6, 7, 5, 6, 7},
                                                 {5, 6, 7, 5, 6, 8, 5, 6, 7, 5, 6, 9}};
  const auto set = set_of(sequences);
  std::vector<Request> requests;
  for (int i = 0; i < 6; ++i) {
    Request r = greedy({1, 5, 6, 7, 5, 6, 7, static_cast<TokenId>(20 + i)}, 30);
    r.constraint = set;
    requests.push_back(r);
    requests.push_back(greedy(prompt_of(8, i), 10));  // unconstrained: these may draft
  }
  EngineOptions speculating = small_options();
  SpeculativeConfig ngram;
  ngram.num_speculative_tokens = 3;
  ngram.prompt_lookup_min = 1;
  ngram.prompt_lookup_max = 3;
  speculating.speculative = ngram;
  const std::vector<Collected> plain = run_all(requests, small_options());
  const std::vector<Collected> drafted = run_all(requests, speculating);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(drafted[i].choices.at(0).tokens, plain[i].choices.at(0).tokens) << i;
    if (i % 2 == 0) {
      EXPECT_TRUE(is_member(output_of(drafted[i].choices.at(0)), *set)) << i;
    }
  }
}

TEST(EngineConstraint, StartsAfterTheGivenGeneratedTokens) {
  Rig rig(small_options());
  const auto prompt = prompt_of(6, 7);
  const std::vector<TokenId> free = rig.model->reference_greedy(prompt, 12);
  ASSERT_EQ(free.size(), 12u);
  // The marker: the 4th and 5th generated tokens, not found earlier.
  const std::vector<TokenId> marker = {free[3], free[4]};
  ASSERT_EQ(std::search(free.begin(), free.begin() + 4, marker.begin(), marker.end()),
            free.begin() + 4);
  const auto set = set_of({{10, 11, 12}});
  Request after = greedy(prompt, 20);
  after.constraint = set;
  after.constraint_after = marker;
  const uint64_t id = rig.engine.add_request(after, rig.outputs.callback());
  // A marker that never comes: the output is free to the end.
  Request never = greedy(prompt, 12);
  never.constraint = set;
  never.constraint_after = {free[3], free[3], free[3]};
  const uint64_t never_id = rig.engine.add_request(never, rig.outputs.callback());
  rig.run();
  std::vector<TokenId> expected(free.begin(), free.begin() + 5);
  expected.insert(expected.end(), {10, 11, 12});
  const Collected::Choice c = rig.outputs.get(id).choices.at(0);
  EXPECT_EQ(c.tokens, expected);
  EXPECT_EQ(c.finish, FinishReason::stop);
  EXPECT_FALSE(c.stop_token);
  EXPECT_EQ(rig.outputs.get(never_id).choices.at(0).tokens, free);
  EXPECT_EQ(rig.outputs.get(never_id).choices.at(0).finish, FinishReason::length);

  Request orphan = greedy(prompt, 5);
  orphan.constraint_after = marker;
  EXPECT_THROW(rig.engine.add_request(orphan, rig.outputs.callback()), Error);
}

struct Ending {
  std::vector<std::vector<TokenId>> sequences;
  int64_t min_tokens = 0;
  int64_t max_tokens = 20;
  bool ignore_eos = false;
  std::vector<TokenId> tokens;  // expected, EOS included
  FinishReason finish;
  bool by_eos;
};

TEST(EngineConstraint, ItsEndMeetsEosMinTokensAndMaxTokens) {
  // EOS is the most likely token at every step: greedy takes it whenever the constraint allows.
  // (Tokens of whole characters, so that the text is their decode.)
  Rig rig(small_options(), /*eos_every=*/1);
  const std::vector<Ending> cases = {
      {{{300}, {300, 310, 320}}, 0, 20, false, {300, kEos}, FinishReason::stop, true},
      {{{300}, {300, 310, 320}},
       0,
       20,
       true,
       {300, kEos},
       FinishReason::stop,
       true},  // the constraint's end
      {{{300}, {300, 310, 320}},
       3,
       20,
       false,
       {300, 310, 320},
       FinishReason::stop,
       false},                                                                         // min_tokens
      {{{300, 310, 320}}, 10, 20, false, {300, 310, 320}, FinishReason::stop, false},  // ended
                                                                                       // first
      {{{300, 310, 320}}, 0, 2, false, {300, 310}, FinishReason::length, false},
      {{{300, 310, 320}}, 0, 3, false, {300, 310, 320}, FinishReason::stop, false},
  };
  std::vector<uint64_t> ids;
  for (const Ending& e : cases) {
    Request r = greedy(prompt_of(4, 1), e.max_tokens);
    r.min_tokens = e.min_tokens;
    r.ignore_eos = e.ignore_eos;
    r.constraint = set_of(e.sequences);
    ids.push_back(rig.engine.add_request(r, rig.outputs.callback()));
  }
  rig.run();
  for (size_t i = 0; i < cases.size(); ++i) {
    const Collected::Choice c = rig.outputs.get(ids[i]).choices.at(0);
    EXPECT_EQ(c.tokens, cases[i].tokens) << "case " << i;
    EXPECT_EQ(c.finish, cases[i].finish) << "case " << i;
    EXPECT_EQ(c.stop_token.has_value(), cases[i].by_eos) << "case " << i;
    // The text: the tokens' (never the EOS's), as they continue the prompt.
    std::vector<TokenId> all = prompt_of(4, 1);
    const std::string before = test::stories_tokenizer().decode(all, true);
    for (TokenId t : output_of(c)) all.push_back(t);
    EXPECT_EQ(c.text, test::stories_tokenizer().decode(all, true).substr(before.size()))
        << "case " << i;
  }
}

TEST(EngineConstraint, StopStringsCutAConstrainedOutput) {
  Rig rig(small_options());
  const std::vector<TokenId> tokens = {300, 310, 320, 330};
  const auto prompt = prompt_of(4, 6);
  const auto text_of = [&](size_t count) {
    std::vector<TokenId> all = prompt;
    const std::string before = test::stories_tokenizer().decode(all, true);
    all.insert(all.end(), tokens.begin(), tokens.begin() + static_cast<long>(count));
    return test::stories_tokenizer().decode(all, true).substr(before.size());
  };
  const std::string whole = text_of(4), two = text_of(2);
  const std::string third = text_of(3).substr(two.size());
  ASSERT_FALSE(third.empty());
  ASSERT_EQ(two.find(third), std::string::npos);
  // A stop string met inside the constrained output cuts it there.
  Request cut = greedy(prompt, 20);
  cut.constraint = set_of({tokens});
  cut.stop = {third};
  const uint64_t cut_id = rig.engine.add_request(cut, rig.outputs.callback());
  // One that only begins at the output's end is held back, then given out when the constraint
  // ends.
  Request held = greedy(prompt, 20);
  held.constraint = set_of({tokens});
  held.stop = {whole.substr(whole.size() - 1) + "\x01"};
  const uint64_t held_id = rig.engine.add_request(held, rig.outputs.callback());
  rig.run();
  const Collected::Choice c = rig.outputs.get(cut_id).choices.at(0);
  EXPECT_EQ(c.finish, FinishReason::stop);
  EXPECT_EQ(c.stop_string, third);
  EXPECT_EQ(c.text, two);
  EXPECT_EQ(c.tokens, (std::vector<TokenId>{300, 310, 320}));
  const Collected::Choice h = rig.outputs.get(held_id).choices.at(0);
  EXPECT_EQ(h.finish, FinishReason::stop);
  EXPECT_FALSE(h.stop_string);
  EXPECT_EQ(h.text, whole);
  EXPECT_EQ(h.tokens, tokens);
}

// A matcher that ends only on EOS: after a whole sequence, EOS is the one token allowed.
class EndsOnEos : public constrain::Matcher {
 public:
  explicit EndsOnEos(std::unique_ptr<constrain::Matcher> inner) : inner_(std::move(inner)) {}
  void fill_mask(std::span<uint64_t> allowed) override { inner_->fill_mask(allowed); }
  bool accept(TokenId token) override {
    ended_ = token == kEos;
    return inner_->accept(token);
  }
  void rollback(int tokens) override { inner_->rollback(tokens); }
  bool can_end() const override { return inner_->can_end(); }
  bool is_ended() const override { return ended_; }
  int64_t vocab_size() const override { return inner_->vocab_size(); }

 private:
  std::unique_ptr<constrain::Matcher> inner_;
  bool ended_ = false;
};

class EndsOnEosConstraint : public constrain::Constraint {
 public:
  explicit EndsOnEosConstraint(std::shared_ptr<const constrain::Constraint> inner)
      : inner_(std::move(inner)) {}
  std::unique_ptr<constrain::Matcher> matcher() const override {
    return std::make_unique<EndsOnEos>(inner_->matcher());
  }

 private:
  std::shared_ptr<const constrain::Constraint> inner_;
};

TEST(EngineConstraint, MinTokensYieldsWhenOnlyTheEndIsLeft) {
  Rig rig(small_options());  // EOS never likely
  Request r = greedy(prompt_of(4, 2), 20);
  r.min_tokens = 6;
  r.constraint = std::make_shared<EndsOnEosConstraint>(set_of({{5, 6}}));
  const uint64_t id = rig.engine.add_request(r, rig.outputs.callback());
  rig.run();
  const Collected::Choice c = rig.outputs.get(id).choices.at(0);
  EXPECT_EQ(c.tokens, (std::vector<TokenId>{5, 6, kEos}));
  EXPECT_EQ(c.finish, FinishReason::stop);
  EXPECT_EQ(c.stop_token, kEos);
}

// A constraint whose matcher allows nothing at all: a fault of the constraint.
class NothingAllowed : public constrain::Matcher {
 public:
  void fill_mask(std::span<uint64_t> allowed) override {
    std::fill(allowed.begin(), allowed.end(), 0);
  }
  bool accept(TokenId) override { return false; }
  void rollback(int) override {}
  bool can_end() const override { return false; }
  bool is_ended() const override { return false; }
  int64_t vocab_size() const override { return vocab; }
  int64_t vocab = kVocab;
};

class NothingAllowedConstraint : public constrain::Constraint {
 public:
  explicit NothingAllowedConstraint(int64_t vocab) : vocab_(vocab) {}
  std::unique_ptr<constrain::Matcher> matcher() const override {
    auto m = std::make_unique<NothingAllowed>();
    m->vocab = vocab_;
    return m;
  }

 private:
  int64_t vocab_;
};

TEST(EngineConstraint, AConstraintAllowingNothingFailsItsRequestAlone) {
  Rig rig(small_options());
  Request bad = greedy(prompt_of(4, 3), 10);
  bad.constraint = std::make_shared<NothingAllowedConstraint>(kVocab);
  const uint64_t bad_id = rig.engine.add_request(bad, rig.outputs.callback());
  const uint64_t good_id =
      rig.engine.add_request(greedy(prompt_of(4, 3), 10), rig.outputs.callback());
  rig.run();
  const Collected b = rig.outputs.get(bad_id);
  EXPECT_EQ(b.choices.at(0).finish, FinishReason::abort);
  EXPECT_TRUE(b.choices.at(0).tokens.empty());
  ASSERT_TRUE(b.error);
  EXPECT_NE(b.error->find("constraint allowed no token"), std::string::npos) << *b.error;
  EXPECT_EQ(rig.outputs.get(good_id).choices.at(0).finish, FinishReason::length);

  Request wrong_vocab = greedy(prompt_of(4, 3), 10);
  wrong_vocab.constraint = std::make_shared<NothingAllowedConstraint>(kVocab + 1);
  EXPECT_THROW(rig.engine.add_request(wrong_vocab, rig.outputs.callback()), Error);
}

}  // namespace
}  // namespace dq4
