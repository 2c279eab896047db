// The one-request facade the CLI runs: the same request gives what the serving engine gives it
// (the server's path), deltas stream in order, the prefix cache carries over to the next
// request, and a failing callback or a request it cannot run is a clear error.
#include "dq4/engine/offline_engine.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>

#include "expect_error.h"
#include "fake_model.h"
#include "stories_fixture.h"

namespace dq4::offline_test {
namespace {

using test::FakeModel;
using test::stories_tokenizer;

constexpr int64_t kVocab = 512;
constexpr TokenId kEos = 2;

std::unique_ptr<FakeModel> fake_model() {
  return std::make_unique<FakeModel>(kVocab, 256, std::vector<TokenId>{kEos}, /*eos_every=*/23);
}

EngineOptions one_conversation() {
  EngineOptions o;
  o.kv_blocks = 16;
  o.block_size = 16;
  o.max_num_seqs = 1;
  o.max_num_batched_tokens = 512;
  o.max_waiting = 1;
  return o;
}

std::vector<TokenId> prompt_of(int length, int salt) {
  std::vector<TokenId> p{1};
  for (int i = 1; i < length; ++i) p.push_back(3 + (i * 37 + salt * 101) % (kVocab - 3));
  return p;
}

// What a request can ask for, each field in use somewhere.
std::vector<Request> varied_requests() {
  std::vector<Request> requests;
  for (int i = 0; i < 8; ++i) {
    Request r;
    r.prompt = prompt_of(5 + 3 * i, i);
    r.max_tokens = 30;
    r.sampling.temperature = i % 2 == 0 ? 0.0f : 0.9f;
    r.sampling.seed = 10 + i;
    r.sampling.top_k = i % 3 == 0 ? 0 : 50;
    r.sampling.top_p = i % 4 == 1 ? 0.8f : 1.0f;
    if (i % 3 == 1) {
      r.sampling.repetition_penalty = 1.3f;
      r.sampling.presence_penalty = 0.4f;
      r.sampling.frequency_penalty = 0.6f;
    }
    if (i == 2) r.stop = {"a", "e"};
    if (i == 3) r.include_stop_str_in_output = true, r.stop = {"o"};
    if (i == 4) r.min_tokens = 25;
    if (i == 5) {  // greedy: its second token is known
      r.sampling.temperature = 0;
      r.stop_token_ids = {300, fake_model()->reference_greedy(r.prompt, 30).at(1)};
    }
    if (i == 6) r.ignore_eos = true, r.skip_special_tokens = false;
    if (i == 7) r.logprobs = 3;
    requests.push_back(std::move(r));
  }
  return requests;
}

struct Served {
  std::vector<TokenId> tokens;
  std::string text;
  std::optional<FinishReason> finish;
  std::optional<std::string> stop_string;
  std::optional<TokenId> stop_token;
  std::vector<TokenLogprobs> logprobs;
  bool finished = false;
};

TEST(OfflineEngine, GivesWhatTheServingEngineGivesTheSameRequest) {
  const std::vector<Request> requests = varied_requests();
  // The server's way: every request at once on the engine's loop thread.
  EngineOptions server_options;
  server_options.kv_blocks = 128;
  server_options.block_size = 4;
  server_options.max_num_batched_tokens = 24;  // prompts in chunks beside the others
  server_options.max_num_seqs = 8;
  Engine server(fake_model(), stories_tokenizer(), server_options);
  server.start();
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Served> served(requests.size());
  for (size_t i = 0; i < requests.size(); ++i)
    server.add_request(requests[i], [&, i](RequestOutput&& out) {
      std::lock_guard lock(mutex);
      for (const ChoiceDelta& d : out.choices) {
        Served& s = served[i];
        s.tokens.insert(s.tokens.end(), d.token_ids.begin(), d.token_ids.end());
        s.text += d.text;
        s.logprobs.insert(s.logprobs.end(), d.logprobs.begin(), d.logprobs.end());
        if (d.finish_reason) s.finish = d.finish_reason;
        if (d.stop_string) s.stop_string = d.stop_string;
        if (d.stop_token) s.stop_token = d.stop_token;
      }
      served[i].finished = out.finished;
      changed.notify_all();
    });
  {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] {
      for (const Served& s : served)
        if (!s.finished) return false;
      return true;
    });
  }
  server.stop();

  OfflineEngine offline(fake_model(), stories_tokenizer(), one_conversation());
  std::set<FinishReason> reasons;
  for (size_t i = 0; i < requests.size(); ++i) {
    const GenerationOutput got = offline.generate(requests[i]);
    const Served& want = served[i];
    SCOPED_TRACE("request " + std::to_string(i));
    EXPECT_EQ(got.prompt_ids, requests[i].prompt);
    EXPECT_EQ(got.token_ids, want.tokens);
    EXPECT_EQ(got.text, want.text);
    EXPECT_EQ(got.finish_reason, want.finish);
    EXPECT_EQ(got.stop_string, want.stop_string);
    EXPECT_EQ(got.stop_token, want.stop_token);
    ASSERT_EQ(got.logprobs.size(), want.logprobs.size());
    for (size_t t = 0; t < got.logprobs.size(); ++t) {
      EXPECT_EQ(got.logprobs[t].chosen.token, want.logprobs[t].chosen.token);
      EXPECT_EQ(got.logprobs[t].chosen.logprob, want.logprobs[t].chosen.logprob);
      EXPECT_EQ(got.logprobs[t].top.size(), 3u);
    }
    reasons.insert(got.finish_reason);
  }
  // The requests end every way they can: stop strings, stop tokens, EOS and length.
  EXPECT_EQ(reasons, (std::set<FinishReason>{FinishReason::stop, FinishReason::length}));
  EXPECT_TRUE(served[2].stop_string) << served[2].text;
  EXPECT_TRUE(served[3].stop_string) << served[3].text;
  EXPECT_EQ(served[5].tokens.size(), 2u);
  EXPECT_EQ(served[5].stop_token, served[5].tokens.back());
  EXPECT_GE(served[4].tokens.size(), 25u);
}

TEST(OfflineEngine, StreamsEveryDeltaAsItComes) {
  OfflineEngine offline(fake_model(), stories_tokenizer(), one_conversation());
  Request r;
  r.prompt = prompt_of(9, 1);
  r.max_tokens = 20;
  r.ignore_eos = true;
  r.sampling.temperature = 0;
  std::vector<TokenId> streamed;
  std::string text;
  int last = 0;
  const GenerationOutput out = offline.generate(r, [&](const ChoiceDelta& d) {
    EXPECT_FALSE(last) << "a delta after the last one";
    streamed.insert(streamed.end(), d.token_ids.begin(), d.token_ids.end());
    text += d.text;
    last = d.finish_reason.has_value();
  });
  EXPECT_TRUE(last);
  EXPECT_EQ(streamed.size(), 20u);
  EXPECT_EQ(streamed, out.token_ids);
  EXPECT_EQ(text, out.text);
  EXPECT_EQ(out.finish_reason, FinishReason::length);
  EXPECT_GE(out.prompt_seconds, 0.0);
  EXPECT_GE(out.decode_seconds, 0.0);
}

TEST(OfflineEngine, TheNextRequestFindsThePreviousOneInThePrefixCache) {
  OfflineEngine offline(fake_model(), stories_tokenizer(), one_conversation());
  Request first;
  first.prompt = prompt_of(20, 2);
  first.max_tokens = 30;
  first.ignore_eos = true;
  first.sampling.temperature = 0;
  const GenerationOutput a = offline.generate(first);
  EXPECT_EQ(a.cached_prompt_tokens, 0);
  // A chat's next turn: the conversation so far, then what the template adds.
  Request next = first;
  next.prompt.insert(next.prompt.end(), a.token_ids.begin(), a.token_ids.end());
  next.prompt.insert(next.prompt.end(), {7, 8, 9});
  const GenerationOutput b = offline.generate(next);
  // Every full block of the first turn's 49 computed tokens (the last one generated is not).
  EXPECT_EQ(b.cached_prompt_tokens, 48);
  EXPECT_EQ(offline.stats().kv_blocks_used, 0);
}

TEST(OfflineEngine, ACallbackThatThrowsEndsTheRequest) {
  OfflineEngine offline(fake_model(), stories_tokenizer(), one_conversation());
  Request r;
  r.prompt = prompt_of(9, 3);
  r.max_tokens = 50;
  r.ignore_eos = true;
  int calls = 0;
  EXPECT_THROW(offline.generate(r,
                                [&](const ChoiceDelta&) {
                                  if (++calls == 3) throw std::runtime_error("stdout is gone");
                                }),
               std::runtime_error);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(offline.stats().requests_finished_abort, 1u);
  EXPECT_EQ(offline.stats().kv_blocks_used, 0);
  EXPECT_EQ(offline.generate(r).token_ids.size(), 50u);  // the engine goes on
}

TEST(OfflineEngine, RejectsWhatItCannotRun) {
  OfflineEngine offline(fake_model(), stories_tokenizer(), one_conversation());
  Request r;
  r.prompt = prompt_of(9, 4);
  r.n = 2;
  test::expect_error([&] { offline.generate(r); }, "n = 2");
  r.n = 1;
  r.prompt = prompt_of(256, 4);
  test::expect_error([&] { offline.generate(r); }, "prompt (256 tokens)");
}

}  // namespace
}  // namespace dq4::offline_test
