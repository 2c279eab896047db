// The engine driven step by step over a fake model whose outputs depend on the KV cache's
// contents: continuous batching, chunked prefill, prefix caching, preemption, aborts, stop
// conditions, n > 1, the background loop, overload and bad requests.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "dq4/engine/engine.h"
#include "engine_rig.h"
#include "expect_error.h"

namespace dq4 {
namespace {

using test::Collected;
using test::FakeModel;
using test::greedy;
using test::kEos;
using test::kVocab;
using test::Outputs;
using test::prompt_of;
using test::Rig;
using test::small_options;
using test::stories_tokenizer;

TEST(EngineFake, ConcurrentRequestsMatchTheirReferenceAndRespectTheBudget) {
  Rig rig(small_options());
  std::vector<uint64_t> ids;
  std::vector<std::vector<TokenId>> expected;
  for (int i = 0; i < 24; ++i) {
    auto prompt = prompt_of(3 + (i * 7) % 50, i);
    const int64_t max_tokens = 5 + i % 9;
    expected.push_back(rig.model->reference_greedy(prompt, max_tokens));
    ids.push_back(rig.engine.add_request(greedy(prompt, max_tokens), rig.outputs.callback()));
  }
  rig.run();
  for (size_t i = 0; i < ids.size(); ++i) {
    const Collected c = rig.outputs.get(ids[i]);
    ASSERT_TRUE(c.finished);
    EXPECT_EQ(c.choices.at(0).tokens, expected[i]) << "request " << i;
    EXPECT_EQ(c.choices.at(0).finish, FinishReason::length);
    EXPECT_EQ(c.usage.completion_tokens, static_cast<int64_t>(expected[i].size()));
  }
  for (const auto& batch : rig.model->batches()) {
    int64_t tokens = 0;
    for (const auto& row : batch) {
      tokens += row.count;
      EXPECT_NE(row.logits, SequenceInput::Logits::all);
    }
    EXPECT_LE(tokens, 32);
    EXPECT_LE(static_cast<int64_t>(batch.size()), 16);
  }
  const EngineStats s = rig.engine.stats();
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.waiting, 0);
  EXPECT_EQ(s.time_to_first_token.count, 24u);
  EXPECT_EQ(s.e2e_request_latency.count, 24u);
  EXPECT_EQ(s.requests_finished_length, 24u);
}

TEST(EngineFake, ALongPromptNeverStallsTheDecoders) {
  Rig rig(small_options());
  std::vector<uint64_t> decoders;
  for (int i = 0; i < 4; ++i)
    decoders.push_back(
        rig.engine.add_request(greedy(prompt_of(5, i), 200), rig.outputs.callback()));
  while (rig.outputs.get(decoders.back()).choices.empty()) ASSERT_TRUE(rig.engine.step());
  const uint64_t long_id =
      rig.engine.add_request(greedy(prompt_of(300, 9), 2), rig.outputs.callback());
  int steps = 0;
  while (rig.outputs.get(long_id).choices.empty()) {
    std::vector<size_t> before;
    for (uint64_t id : decoders) before.push_back(rig.outputs.get(id).choices[0].tokens.size());
    ASSERT_TRUE(rig.engine.step());
    ++steps;
    for (size_t i = 0; i < decoders.size(); ++i)
      EXPECT_EQ(rig.outputs.get(decoders[i]).choices[0].tokens.size(), before[i] + 1);
  }
  EXPECT_GE(steps, 300 / 28);  // the prompt went in chunks of what the decoders left
  for (uint64_t id : decoders) rig.engine.abort(id);
  rig.run();
}

TEST(EngineFake, AbortingFreesTheBlocksAtOnce) {
  EngineOptions o = small_options();
  o.enable_prefix_caching = false;
  // The same requests run side by side in a twin engine that aborts nothing: one step after
  // the abort, this engine holds fewer blocks than the twin by at least the aborted prompt's.
  Rig rig(o), twin(o);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 6; ++i) {
    ids.push_back(rig.engine.add_request(greedy(prompt_of(20, i), 100), rig.outputs.callback()));
    twin.engine.add_request(greedy(prompt_of(20, i), 100), twin.outputs.callback());
  }
  for (int i = 0; i < 5; ++i) {
    rig.engine.step();
    twin.engine.step();
  }
  EXPECT_GT(rig.engine.stats().kv_blocks_used, 0);
  rig.engine.abort(ids[2]);
  rig.engine.step();
  twin.engine.step();
  const Collected aborted = rig.outputs.get(ids[2]);
  EXPECT_TRUE(aborted.finished);
  EXPECT_EQ(aborted.choices.at(0).finish, FinishReason::abort);
  EXPECT_GE(twin.engine.stats().kv_blocks_used - rig.engine.stats().kv_blocks_used,
            20 / o.block_size);
  for (uint64_t id : ids) rig.engine.abort(id);
  rig.engine.step();
  EXPECT_FALSE(rig.engine.has_unfinished());
  const EngineStats s = rig.engine.stats();
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_EQ(s.requests_finished_abort, 6u);
  rig.engine.abort(ids[0]);  // finished: a no-op
  EXPECT_FALSE(rig.engine.step());
}

TEST(EngineFake, PrefixCacheHitsGiveTheSameOutput) {
  Rig rig(small_options());
  const auto prompt = prompt_of(37, 3);
  const uint64_t first = rig.engine.add_request(greedy(prompt, 12), rig.outputs.callback());
  rig.run();
  const uint64_t second = rig.engine.add_request(greedy(prompt, 12), rig.outputs.callback());
  rig.run();
  const Collected a = rig.outputs.get(first), b = rig.outputs.get(second);
  EXPECT_EQ(a.usage.cached_prompt_tokens, 0);
  EXPECT_EQ(b.usage.cached_prompt_tokens, 36);  // 9 full blocks of 4
  EXPECT_EQ(a.choices.at(0).tokens, b.choices.at(0).tokens);
  EXPECT_EQ(b.choices.at(0).tokens, rig.model->reference_greedy(prompt, 12));
  // A longer prompt sharing the first one's tokens and generated text hits them too.
  auto longer = prompt;
  longer.insert(longer.end(), a.choices.at(0).tokens.begin(), a.choices.at(0).tokens.end());
  longer.push_back(77);
  const uint64_t third = rig.engine.add_request(greedy(longer, 5), rig.outputs.callback());
  rig.run();
  EXPECT_EQ(rig.outputs.get(third).usage.cached_prompt_tokens, 48);
  EXPECT_EQ(rig.outputs.get(third).choices.at(0).tokens, rig.model->reference_greedy(longer, 5));
  const EngineStats s = rig.engine.stats();
  EXPECT_EQ(s.prefix_cache_hits, 36u + 48u);
  EXPECT_EQ(s.prefix_cache_queries, 37u + 37u + longer.size());
}

TEST(EngineFake, PreemptionUnderATinyPoolGivesTheSameOutputs) {
  for (bool caching : {false, true}) {
    EngineOptions o = small_options();
    o.kv_blocks = 24;  // 96 tokens for 8 sequences of up to 40
    o.max_model_len = 96;
    o.enable_prefix_caching = caching;
    Rig rig(o);
    std::vector<uint64_t> ids;
    std::vector<std::vector<TokenId>> expected;
    for (int i = 0; i < 8; ++i) {
      const auto prompt = prompt_of(10 + i, i);
      expected.push_back(rig.model->reference_greedy(prompt, 30));
      ids.push_back(rig.engine.add_request(greedy(prompt, 30), rig.outputs.callback()));
    }
    rig.run();
    for (size_t i = 0; i < ids.size(); ++i)
      EXPECT_EQ(rig.outputs.get(ids[i]).choices.at(0).tokens, expected[i]) << "request " << i;
    const EngineStats s = rig.engine.stats();
    EXPECT_GT(s.preemptions, 0u);
    EXPECT_EQ(s.kv_blocks_used, 0);
  }
}

TEST(EngineFake, StopsOnEosStopTokensStopStringsAndTheContext) {
  Rig rig(small_options(), /*eos_every=*/13, /*context=*/64);
  const auto prompt = prompt_of(5, 1);  // EOS is likely after 13 tokens: the 9th generated
  const uint64_t eos = rig.engine.add_request(greedy(prompt, 50), rig.outputs.callback());
  Request ignoring = greedy(prompt, 10);
  ignoring.ignore_eos = true;
  const uint64_t ignored = rig.engine.add_request(ignoring, rig.outputs.callback());
  Request min_tokens = greedy(prompt, 20);
  min_tokens.min_tokens = 10;
  const uint64_t late = rig.engine.add_request(min_tokens, rig.outputs.callback());
  const auto reference = rig.model->reference_greedy(prompt, 50);
  ASSERT_EQ(reference.size(), 9u);
  Request stop_id = greedy(prompt, 50);
  stop_id.stop_token_ids = {reference[3]};
  const uint64_t by_id = rig.engine.add_request(stop_id, rig.outputs.callback());
  const uint64_t to_context =
      rig.engine.add_request(greedy(prompt_of(60, 2), std::nullopt), rig.outputs.callback());
  rig.run();

  const Collected a = rig.outputs.get(eos);
  EXPECT_EQ(a.choices.at(0).tokens, reference);
  EXPECT_EQ(a.choices.at(0).finish, FinishReason::stop);
  EXPECT_EQ(a.choices.at(0).stop_token, kEos);

  const Collected b = rig.outputs.get(ignored);
  EXPECT_EQ(b.choices.at(0).tokens.size(), 10u);
  EXPECT_EQ(b.choices.at(0).tokens[8], kEos);
  EXPECT_EQ(b.choices.at(0).finish, FinishReason::length);

  const Collected c = rig.outputs.get(late);  // EOS was not an option before 10 tokens
  EXPECT_NE(c.choices.at(0).tokens[8], kEos);
  EXPECT_GE(c.choices.at(0).tokens.size(), 10u);

  const Collected d = rig.outputs.get(by_id);
  EXPECT_EQ(d.choices.at(0).tokens, std::vector<TokenId>(reference.begin(), reference.begin() + 4));
  EXPECT_EQ(d.choices.at(0).stop_token, reference[3]);
  EXPECT_EQ(d.choices.at(0).finish, FinishReason::stop);

  const Collected e = rig.outputs.get(to_context);
  EXPECT_EQ(e.choices.at(0).tokens.size(), 4u);  // 60 + 4 = the context of 64
  EXPECT_EQ(e.choices.at(0).finish, FinishReason::length);
}

TEST(EngineFake, StopStringsCutTheText) {
  Rig rig(small_options());
  const auto prompt = prompt_of(6, 4);
  const auto reference = rig.model->reference_greedy(prompt, 40);
  const std::string text = stories_tokenizer().decode(reference, true);
  ASSERT_GT(text.size(), 20u);
  const std::string stop = text.substr(10, 3);
  Request r = greedy(prompt, 40);
  r.stop = {stop};
  const uint64_t id = rig.engine.add_request(r, rig.outputs.callback());
  rig.run();
  const Collected c = rig.outputs.get(id);
  EXPECT_EQ(c.choices.at(0).finish, FinishReason::stop);
  EXPECT_EQ(c.choices.at(0).stop_string, stop);
  EXPECT_EQ(c.choices.at(0).text.find(stop), std::string::npos);
  EXPECT_LT(c.choices.at(0).tokens.size(), reference.size());
}

TEST(EngineFake, WithoutDetokenizeOnlyTokenIdsComeOut) {
  Rig rig(small_options());
  const auto prompt = prompt_of(6, 5);
  Request r = greedy(prompt, 20);
  const uint64_t with_text = rig.engine.add_request(r, rig.outputs.callback());
  r.detokenize = false;
  const uint64_t ids_only = rig.engine.add_request(r, rig.outputs.callback());
  rig.run();
  const Collected a = rig.outputs.get(with_text), b = rig.outputs.get(ids_only);
  EXPECT_EQ(b.choices.at(0).tokens, a.choices.at(0).tokens);
  EXPECT_FALSE(a.choices.at(0).text.empty());
  EXPECT_EQ(b.choices.at(0).text, "");
  r.stop = {"x"};
  test::expect_error([&] { rig.engine.add_request(r, rig.outputs.callback()); },
                     "stop strings need detokenize");
}

TEST(EngineFake, SeveralChoicesShareThePromptAndFollowTheirSeeds) {
  Rig rig(small_options());
  Request r;
  r.prompt = prompt_of(30, 5);
  r.max_tokens = 16;
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 42;
  r.n = 3;
  r.logprobs = 2;
  const uint64_t together = rig.engine.add_request(r, rig.outputs.callback());
  // Busy neighbours must not change anything.
  for (int i = 0; i < 5; ++i)
    rig.engine.add_request(greedy(prompt_of(9, i), 20), rig.outputs.callback());
  rig.run();
  const Collected all = rig.outputs.get(together);
  ASSERT_EQ(all.choices.size(), 3u);
  EXPECT_EQ(all.usage.completion_tokens, 48);
  for (int i = 0; i < 3; ++i) {
    Request alone = r;
    alone.n = 1;
    alone.sampling.seed = 42 + i;
    const uint64_t id = rig.engine.add_request(alone, rig.outputs.callback());
    rig.run();
    const Collected one = rig.outputs.get(id);
    EXPECT_EQ(one.choices.at(0).tokens, all.choices.at(i).tokens) << "choice " << i;
    EXPECT_EQ(one.choices.at(0).text, all.choices.at(i).text) << "choice " << i;
    ASSERT_EQ(all.choices.at(i).logprobs.size(), 16u);
    for (const TokenLogprobs& lp : all.choices.at(i).logprobs) {
      EXPECT_EQ(lp.top.size(), 2u);
      EXPECT_LE(lp.chosen.logprob, 0.0f);
      EXPECT_GE(lp.top[0].logprob, lp.top[1].logprob);
    }
  }
  EXPECT_NE(all.choices.at(0).tokens, all.choices.at(1).tokens);
  EXPECT_EQ(rig.engine.stats().kv_blocks_used, 0);
}

TEST(EngineFake, TheLoopThreadServesRequestsFromManyThreads) {
  Rig rig(small_options());
  rig.engine.start();
  std::vector<std::thread> clients;
  std::mutex ids_mutex;
  std::vector<std::pair<uint64_t, std::vector<TokenId>>> ids;
  for (int t = 0; t < 4; ++t)
    clients.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        const auto prompt = prompt_of(4 + t * 5 + i, t * 10 + i);
        const auto expected = rig.model->reference_greedy(prompt, 8);
        const uint64_t id = rig.engine.add_request(greedy(prompt, 8), rig.outputs.callback());
        std::lock_guard lock(ids_mutex);
        ids.emplace_back(id, expected);
      }
    });
  for (auto& c : clients) c.join();
  std::vector<uint64_t> all;
  for (auto& [id, expected] : ids) all.push_back(id);
  rig.outputs.wait_finished(all);
  for (auto& [id, expected] : ids) EXPECT_EQ(rig.outputs.get(id).choices.at(0).tokens, expected);
  rig.engine.stop();
  test::expect_error(
      [&] {
        rig.engine.add_request(greedy({1, 5}, 3), rig.outputs.callback());
      },
      "shutting down");
}

// Requests part way through their tokens when stop(abort) comes. The steps are the test's own (no
// loop thread, which could finish the requests first on a busy machine).
TEST(EngineFake, StopCanAbortWhatIsInFlight) {
  Rig rig(small_options());
  std::vector<uint64_t> ids;
  for (int i = 0; i < 4; ++i)
    ids.push_back(rig.engine.add_request(greedy(prompt_of(10, i), 1000), rig.outputs.callback()));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(rig.engine.step());
  for (uint64_t id : ids) ASSERT_FALSE(rig.outputs.get(id).choices.at(0).tokens.empty());
  rig.engine.stop(Engine::StopMode::abort);
  for (uint64_t id : ids) {
    const Collected c = rig.outputs.get(id);
    EXPECT_TRUE(c.finished);
    EXPECT_EQ(c.choices.at(0).finish, FinishReason::abort);
    EXPECT_LT(c.choices.at(0).tokens.size(), 10u);
  }
  EXPECT_EQ(rig.engine.stats().kv_blocks_used, 0);
}

TEST(EngineFake, RefusesRequestsBeyondTheWaitingLimit) {
  EngineOptions o = small_options();
  o.max_waiting = 3;
  Rig rig(o);
  for (int i = 0; i < 3; ++i)
    rig.engine.add_request(greedy(prompt_of(5, i), 4), rig.outputs.callback());
  EXPECT_THROW(rig.engine.add_request(greedy(prompt_of(5, 9), 4), rig.outputs.callback()),
               EngineOverloaded);
  rig.engine.step();  // admitted: no longer waiting
  rig.engine.add_request(greedy(prompt_of(5, 9), 4), rig.outputs.callback());
  rig.run();
}

TEST(EngineFake, RejectsBadRequestsAndOptions) {
  Rig rig(small_options(), 0, 128);
  auto cb = rig.outputs.callback();
  test::expect_error([&] { rig.engine.add_request(greedy({}, 4), cb); }, "prompt has no tokens");
  test::expect_error([&] { rig.engine.add_request(greedy({1, 600}, 4), cb); }, "600");
  test::expect_error([&] { rig.engine.add_request(greedy(prompt_of(100, 1), 29), cb); },
                     {"prompt (100 tokens)", "128"});
  rig.engine.add_request(greedy(prompt_of(100, 1), 28), cb);
  Request r = greedy({1, 5}, 4);
  r.n = 0;
  test::expect_error([&] { rig.engine.add_request(r, cb); }, "n must be");
  r = greedy({1, 5}, 4);
  r.stop = {""};
  test::expect_error([&] { rig.engine.add_request(r, cb); }, "stop string is empty");
  r = greedy({1, 5}, 4);
  r.stop_token_ids = {-1};
  test::expect_error([&] { rig.engine.add_request(r, cb); }, "stop token id -1");
  r = greedy({1, 5}, 4);
  r.sampling.top_p = 2;
  EXPECT_THROW(rig.engine.add_request(r, cb), Error);
  rig.run();

  EngineOptions o = small_options();
  o.max_num_seqs = 0;
  test::expect_error(
      [&] {
        Engine(std::make_unique<FakeModel>(kVocab, 128, std::vector<TokenId>{2}),
               stories_tokenizer(), o);
      },
      "max_num_seqs");
  o = small_options();
  o.max_num_batched_tokens = 8;  // fewer than max_num_seqs decode tokens
  test::expect_error(
      [&] {
        Engine(std::make_unique<FakeModel>(kVocab, 128, std::vector<TokenId>{2}),
               stories_tokenizer(), o);
      },
      "max_num_batched_tokens (8) must be at least max_num_seqs (16)");
  o = small_options();
  o.max_model_len = 4096;  // more than the pool's 1024 tokens
  test::expect_error(
      [&] {
        Engine(std::make_unique<FakeModel>(kVocab, 8192, std::vector<TokenId>{2}),
               stories_tokenizer(), o);
      },
      {"1024 tokens", "max_model_len 4096"});
  o.max_model_len = 0;  // unset: the pool's size
  Engine fits(std::make_unique<FakeModel>(kVocab, 8192, std::vector<TokenId>{2}),
              stories_tokenizer(), o);
  EXPECT_EQ(fits.max_model_len(), 1024);
}

// The loop runs a step only once before_step has returned: held there, a request gets nothing;
// each return lets exactly one step run (the first computes the prompt and samples a token).
TEST(EngineFake, TheLoopStepsOnlyPastBeforeStep) {
  std::mutex mutex;
  std::condition_variable changed;
  int calls = 0, permits = 0;
  EngineOptions o = small_options();
  o.before_step = [&] {
    std::unique_lock lock(mutex);
    ++calls;
    changed.notify_all();
    changed.wait(lock, [&] { return permits > 0; });
    --permits;
  };
  const auto held_after = [&](int steps) {  // the loop is back in before_step after `steps`
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(30), [&] { return calls > steps; });
  };
  const auto allow = [&](int steps) {
    std::lock_guard lock(mutex);
    permits += steps;
    changed.notify_all();
  };
  Rig rig(o);
  rig.engine.start();
  const uint64_t id = rig.engine.add_request(greedy(prompt_of(5, 1), 3), rig.outputs.callback());
  ASSERT_TRUE(held_after(0));
  EXPECT_EQ(rig.outputs.get(id).events, 0);
  allow(1);
  ASSERT_TRUE(held_after(1));
  EXPECT_EQ(rig.outputs.get(id).choices.at(0).tokens.size(), 1u);
  EXPECT_FALSE(rig.outputs.get(id).finished);
  allow(2);
  rig.outputs.wait_finished({id});
  EXPECT_EQ(rig.outputs.get(id).choices.at(0).tokens.size(), 3u);
  rig.engine.stop();
}

}  // namespace
}  // namespace dq4
