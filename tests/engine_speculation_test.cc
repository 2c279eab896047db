// Speculative decoding over the fake model, whose logits depend on every key read back from the
// KV cache: the proposers, and outputs identical with and without speculation (greedy, seeded
// sampling, penalties, logprobs, stop strings and ids, min_tokens, n > 1, prefix caching,
// preemption, sequences that speculate beside ones that do not).
#include <gtest/gtest.h>

#include "dq4/engine/engine.h"
#include "dq4/engine/speculation.h"
#include "engine_outputs.h"
#include "expect_error.h"
#include "fake_model.h"
#include "stories_fixture.h"

namespace dq4::speculation_test {
namespace {

using test::ChoiceOutput;
using test::FakeModel;

constexpr int64_t kVocab = 512;
constexpr TokenId kEos = 2;

std::vector<TokenId> draft(Proposer& p, std::vector<TokenId> tokens, size_t k) {
  std::vector<TokenId> out(k);
  out.resize(static_cast<size_t>(p.propose(tokens, out)));
  return out;
}

TEST(Speculation, NgramProposesWhatFollowedTheLongestRecentMatch) {
  SpeculativeConfig c;
  c.num_speculative_tokens = 3;
  c.prompt_lookup_min = 2;
  c.prompt_lookup_max = 3;
  auto p = make_proposer(c);
  // The suffix 7 8 9 occurs at 1 (then 4 5) and 2 8 9 ... : the 3-gram wins over later 2-grams.
  EXPECT_EQ(draft(*p, {1, 7, 8, 9, 4, 5, 6, 8, 9, 3, 3, 7, 8, 9}, 3),
            (std::vector<TokenId>{4, 5, 6}));
  // Only the 2-gram 8 9 matches; its most recent occurrence (followed by 3 3) proposes.
  EXPECT_EQ(draft(*p, {8, 9, 4, 8, 9, 3, 3, 5, 8, 9}, 3), (std::vector<TokenId>{3, 3, 5}));
  // The continuation runs out at the sequence's end.
  EXPECT_EQ(draft(*p, {5, 6, 5, 6}, 3), (std::vector<TokenId>{5, 6}));
  // Nothing of at least prompt_lookup_min tokens recurs.
  EXPECT_TRUE(draft(*p, {1, 2, 3, 4, 2, 5}, 3).empty());
}

TEST(Speculation, ReplayIsRightForTheAcceptedShareAndWrongAfter) {
  SpeculativeConfig c;
  c.method = SpeculativeConfig::Method::replay;
  c.num_speculative_tokens = 4;
  c.replay_accept = 0.5;
  c.replay_tokens = std::make_shared<std::vector<TokenId>>(
      std::vector<TokenId>{1, 2, 10, 11, 12, 13, 14, 15, 16, 17, 18});
  auto p = make_proposer(c);
  // 4 drafted, 2 right: the third is wrong.
  const auto d = draft(*p, {1, 2}, 4);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0], 10);
  EXPECT_EQ(d[1], 11);
  EXPECT_NE(d[2], 12);
  // Past the reference: nothing.
  EXPECT_TRUE(draft(*p, {1, 2, 10, 11, 12, 13, 14, 15, 16, 17, 18}, 4).empty());
  c.replay_accept = 1;
  EXPECT_EQ(draft(*make_proposer(c), {1, 2, 10}, 4), (std::vector<TokenId>{11, 12, 13, 14}));
}

TEST(Speculation, ConfigsParseAndBadValuesNameTheField) {
  const SpeculativeConfig c = parse_speculative_config(
      R"({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4,
          "prompt_lookup_min": 2})");
  EXPECT_EQ(c.num_speculative_tokens, 4);
  EXPECT_EQ(c.prompt_lookup_min, 2);
  EXPECT_EQ(c.prompt_lookup_max, 4);
  EXPECT_EQ(parse_speculative_config(R"({"method": "ngram", "num_speculative_tokens": 2,
      "prompt_lookup_max": 3})")
                .prompt_lookup_min,
            3);
  test::expect_error(
      [] { parse_speculative_config(R"({"method": "ngram", "num_speculative_tokens": -1})"); },
      "num_speculative_tokens");
  test::expect_error(
      [] {
        parse_speculative_config(R"({"method": "ngram", "num_speculative_tokens": 2,
      "prompt_lookup_min": 3, "prompt_lookup_max": 2})");
      },
      "prompt_lookup_max");
  test::expect_error(
      [] { parse_speculative_config(R"({"method": "eagle", "num_speculative_tokens": 2})"); },
      "method");
  test::expect_error(
      [] {
        parse_speculative_config(R"({"method": "ngram", "num_speculative_tokens": 2,
      "prompt_lookup_mn": 3})");
      },
      "prompt_lookup_mn");
  test::expect_error([] { parse_speculative_config("{"); }, "not valid JSON");
  const SpeculativeConfig r = parse_speculate_spec("replay:k=3,accept=0.25");
  EXPECT_EQ(r.method, SpeculativeConfig::Method::replay);
  EXPECT_EQ(r.name(), "replay:k=3,accept=0.25");
  test::expect_error([] { parse_speculate_spec("replay:k=4,accept=2"); }, "accept");
  test::expect_error([] { parse_speculate_spec("replay:k=x"); }, "k");
  test::expect_error([] { parse_speculate_spec("medusa"); }, "medusa");
}

using Run = std::vector<test::ChoiceOutputs>;  // per request

std::vector<TokenId> prompt_of(int length, int salt) {
  std::vector<TokenId> p{1};
  for (int i = 1; i < length; ++i) p.push_back(3 + (i * 37 + salt * 101) % (kVocab - 3));
  return p;
}

struct Outcome {
  Run run;
  std::vector<Usage> usage;  // per request
  EngineStats stats;
};

// Runs the requests together, or each to its end before the next is added (`one_by_one`).
Outcome run_requests(EngineOptions options, const std::vector<Request>& requests,
                     bool one_by_one = false) {
  auto* model = new FakeModel(kVocab, 4096, {kEos});
  Run run(requests.size());
  std::vector<Usage> usage(requests.size());
  Engine engine(std::unique_ptr<EngineModel>(model), test::stories_tokenizer(), options);
  for (size_t i = 0; i < requests.size(); ++i) {
    engine.add_request(requests[i], [&run, &usage, i](RequestOutput&& out) {
      usage[i] = out.usage;
      for (const ChoiceDelta& d : out.choices) test::append(run[i], d);
    });
    if (one_by_one) {
      while (engine.has_unfinished()) EXPECT_TRUE(engine.step());
    }
  }
  while (engine.has_unfinished()) EXPECT_TRUE(engine.step());
  return {run, usage, engine.stats()};
}

void expect_same(const Run& want, const Run& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i)
    test::expect_same_choices(want[i], got[i], what + " request " + std::to_string(i));
}

EngineOptions options() {
  EngineOptions o;
  o.kv_blocks = 256;
  o.block_size = 4;
  o.max_num_batched_tokens = 64;
  o.max_num_seqs = 16;
  o.speculative_row_budget = 64;  // every sequence drafts fully
  return o;
}

Request greedy(std::vector<TokenId> prompt, int64_t max_tokens) {
  Request r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  return r;
}

// Requests covering what decoding must keep doing, given a plain run of request 0 (the replay's
// reference) for the stop string and id taken from its output.
std::vector<Request> workload(const ChoiceOutput& first) {
  std::vector<Request> rs;
  rs.push_back(greedy(prompt_of(9, 1), 40));
  Request sampled = greedy(prompt_of(13, 2), 30);
  sampled.sampling.temperature = 0.9f;
  sampled.sampling.top_p = 0.95f;
  sampled.sampling.seed = 77;
  sampled.n = 2;
  sampled.logprobs = 2;
  rs.push_back(sampled);
  Request penalized = sampled;
  penalized.n = 1;
  penalized.sampling.frequency_penalty = 1.5f;
  penalized.sampling.repetition_penalty = 1.3f;
  penalized.prompt = prompt_of(6, 3);
  rs.push_back(penalized);
  Request stop_id = rs[0];
  stop_id.stop_token_ids = {first.tokens.at(11)};
  stop_id.min_tokens = 3;
  rs.push_back(stop_id);
  Request stop_string = rs[0];
  stop_string.stop = {first.text.substr(first.text.size() / 2, 2)};
  rs.push_back(stop_string);
  Request plain = rs[0];  // beside the others, never drafting; a prefix cache hit
  plain.speculate = false;
  rs.push_back(plain);
  Request min_tokens = rs[0];
  min_tokens.stop_token_ids = {first.tokens.at(1)};
  min_tokens.min_tokens = 6;
  min_tokens.max_tokens = 9;
  rs.push_back(min_tokens);
  return rs;
}

SpeculativeConfig replay(double accept, int64_t k, const std::vector<TokenId>& prompt,
                         const ChoiceOutput& first) {
  SpeculativeConfig c;
  c.method = SpeculativeConfig::Method::replay;
  c.num_speculative_tokens = k;
  c.replay_accept = accept;
  auto ref = std::make_shared<std::vector<TokenId>>(prompt);
  ref->insert(ref->end(), first.tokens.begin(), first.tokens.end());
  c.replay_tokens = ref;
  return c;
}

TEST(Speculation, OutputsAreIdenticalWithAndWithoutIt) {
  const Request first = greedy(prompt_of(9, 1), 40);
  const ChoiceOutput reference = run_requests(options(), {first}).run[0].at(0);
  const std::vector<Request> requests = workload(reference);
  const Outcome plain = run_requests(options(), requests);
  ASSERT_EQ(plain.run[3].at(0).finish, FinishReason::stop);
  ASSERT_EQ(plain.run[4].at(0).finish, FinishReason::stop);
  ASSERT_EQ(plain.stats.speculation.draft_tokens, 0u);

  std::vector<SpeculativeConfig> configs;
  for (double accept : {0.0, 0.4, 0.75, 1.0})
    configs.push_back(replay(accept, 4, first.prompt, reference));
  configs.push_back(replay(1.0, 1, first.prompt, reference));
  configs.push_back(parse_speculate_spec("ngram:k=3,min=1,max=3"));
  for (const SpeculativeConfig& c : configs) {
    EngineOptions o = options();
    o.speculative = c;
    const Outcome got = run_requests(o, requests);
    expect_same(plain.run, got.run, c.name());
    const SpeculationStats& s = got.stats.speculation;
    EXPECT_GT(s.draft_tokens, 0u) << c.name();
    EXPECT_LE(s.accepted_tokens, s.draft_tokens) << c.name();
    if (c.method == SpeculativeConfig::Method::replay && c.replay_accept == 0) {
      EXPECT_EQ(s.accepted_tokens, 0u);
    }
    if (c.method == SpeculativeConfig::Method::replay && c.replay_accept == 1) {
      // Request 0 follows the reference, so at least its 39 tokens after the first came from
      // accepted drafts (k + 1 per step).
      EXPECT_GE(s.accepted_tokens, 39u * static_cast<uint64_t>(c.num_speculative_tokens) /
                                       static_cast<uint64_t>(c.num_speculative_tokens + 1));
      ASSERT_EQ(s.accepted_per_position.size(), static_cast<size_t>(c.num_speculative_tokens));
      EXPECT_GT(s.accepted_per_position.back(), 0u);
    }
    EXPECT_EQ(got.stats.kv_blocks_used, 0) << c.name();
  }
}

TEST(Speculation, RejectionSamplingKeepsGreedyOutputsAndIsSeeded) {
  // Greedy requests: the rejection sampler accepts exactly the drafts matching would. Sampled
  // ones: the same tokens for the same seed (not plain decoding's; the sampler's test checks
  // their distribution).
  const Request first = greedy(prompt_of(9, 1), 40);
  const ChoiceOutput reference = run_requests(options(), {first}).run[0].at(0);
  const std::vector<Request> requests = workload(reference);
  const Outcome plain = run_requests(options(), requests);
  EngineOptions o = options();
  o.speculative = replay(1.0, 4, first.prompt, reference);
  o.speculative->acceptance = SpeculativeConfig::Acceptance::rejection_sampler;
  const Outcome got = run_requests(o, requests);
  const Outcome again = run_requests(o, requests);
  expect_same(got.run, again.run, "rejection, twice");
  for (size_t i : {0, 3, 4, 5, 6}) expect_same({plain.run[i]}, {got.run[i]}, "greedy");
  const SpeculationStats& s = got.stats.speculation;
  EXPECT_GT(s.draft_tokens, 0u);
  EXPECT_LE(s.accepted_tokens, s.draft_tokens);
  EXPECT_GT(s.accepted_tokens, 0u);
  EXPECT_EQ(got.stats.kv_blocks_used, 0);
  EXPECT_EQ(parse_speculative_config(R"({"method": "ngram", "num_speculative_tokens": 2,
      "acceptance_method": "rejection_sampler"})")
                .acceptance,
            SpeculativeConfig::Acceptance::rejection_sampler);
  test::expect_error(
      [] {
        parse_speculative_config(R"({"method": "ngram", "num_speculative_tokens": 2,
      "acceptance_method": "typical_acceptance_sampler"})");
      },
      "acceptance_method");
  EXPECT_EQ(parse_speculate_spec("ngram:k=2,acceptance=rejection_sampler").name(),
            "ngram:k=2,min=2,max=4,acceptance=rejection_sampler");
  test::expect_error([] { parse_speculate_spec("replay:acceptance=typical"); }, "acceptance");
}

TEST(Speculation, RollbackUnderPreemptionAndPrefixCachingKeepsOutputs) {
  // A pool too small for the batch: sequences are preempted mid-speculation and recomputed; the
  // prefix cache holds blocks written by speculative steps, which later requests reuse.
  EngineOptions o = options();
  o.kv_blocks = 40;
  std::vector<Request> requests;
  for (int i = 0; i < 6; ++i) requests.push_back(greedy(prompt_of(10 + i, i % 3), 36));
  requests[4].sampling.temperature = 1.0f;
  requests[4].sampling.seed = 5;
  const ChoiceOutput ref0 = run_requests(options(), {requests[0]}).run[0].at(0);
  const Outcome plain = run_requests(o, requests);
  ASSERT_GT(plain.stats.preemptions, 0u);
  o.speculative = replay(0.6, 4, requests[0].prompt, ref0);
  const Outcome got = run_requests(o, requests);
  EXPECT_GT(got.stats.preemptions, 0u);
  EXPECT_GT(got.stats.prefix_cache_hits, 0u);
  EXPECT_GT(got.stats.speculation.accepted_tokens, 0u);
  expect_same(plain.run, got.run, "preempted");
  // A prompt that is a speculated sequence's whole text: found in the prefix cache after a
  // speculative run, and continued as a fresh run continues it.
  std::vector<TokenId> longer = requests[0].prompt;
  longer.insert(longer.end(), ref0.tokens.begin(), ref0.tokens.end());
  std::vector<Request> again = requests;
  again.push_back(greedy(longer, 8));
  o.kv_blocks = 256;
  const Outcome fresh = run_requests(options(), {again.back()});
  const Outcome after = run_requests(o, again, true);
  EXPECT_GE(after.usage.back().cached_prompt_tokens, static_cast<int64_t>(longer.size()) - 4);
  EXPECT_EQ(after.run.back().at(0).tokens, fresh.run[0].at(0).tokens);
}

TEST(Speculation, ManyStreamsDraftLessWithinTheRowBudget) {
  // 8 decoding sequences and a budget of 16 decode rows: one draft each at most; at 16, none.
  std::vector<Request> requests;
  for (int i = 0; i < 8; ++i) requests.push_back(greedy(prompt_of(5, i), 12));
  EngineOptions o = options();
  o.speculative_row_budget = 16;
  o.speculative =
      replay(1.0, 4, requests[0].prompt, run_requests(options(), {requests[0]}).run[0].at(0));
  Outcome got = run_requests(o, requests);
  EXPECT_GT(got.stats.speculation.draft_tokens, 0u);
  ASSERT_EQ(got.stats.speculation.accepted_per_position.size(), 4u);
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(got.stats.speculation.accepted_per_position[i], 0u);
  for (int i = 8; i < 16; ++i) requests.push_back(greedy(prompt_of(5, i), 12));
  got = run_requests(o, requests);
  EXPECT_EQ(got.stats.speculation.draft_tokens, 0u);
}

TEST(Speculation, DraftingPausesWhileNothingIsAccepted) {
  // Every draft wrong: after the first failures a sequence drafts rarely, in probes.
  const Request r = greedy(prompt_of(9, 1), 120);
  const ChoiceOutput reference = run_requests(options(), {r}).run[0].at(0);
  EngineOptions o = options();
  o.speculative = replay(0.0, 4, r.prompt, reference);
  const Outcome got = run_requests(o, {r});
  EXPECT_EQ(got.run[0].at(0).tokens, reference.tokens);
  EXPECT_EQ(got.stats.speculation.accepted_tokens, 0u);
  // Drafting in full all along would be 4 per token.
  EXPECT_LT(got.stats.speculation.draft_tokens, 40u);
}

}  // namespace
}  // namespace dq4::speculation_test
