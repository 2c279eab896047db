#pragma once
// The engine over a fake model, stepped by a test: its outputs collected per request and choice,
// and the prompts and requests the engine tests build.

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dq4/engine/engine.h"
#include "fake_model.h"
#include "stories_fixture.h"

namespace dq4::test {

constexpr int64_t kVocab = 512;
constexpr TokenId kEos = 2;

// Everything the callbacks delivered, per request.
struct Collected {
  struct Choice {
    std::vector<TokenId> tokens;
    std::string text;
    std::vector<TokenLogprobs> logprobs;
    std::optional<FinishReason> finish;
    std::optional<std::string> stop_string;
    std::optional<TokenId> stop_token;
  };
  std::map<int, Choice> choices;
  Usage usage;
  std::optional<std::string> error;
  int events = 0;
  bool finished = false;
};

class Outputs {
 public:
  OutputCallback callback() {
    return [this](RequestOutput&& out) {
      std::lock_guard lock(mutex_);
      Collected& c = by_id_[out.request_id];
      EXPECT_FALSE(c.finished) << "event after the last one";
      ++c.events;
      for (ChoiceDelta& d : out.choices) {
        Collected::Choice& ch = c.choices[d.index];
        EXPECT_FALSE(ch.finish) << "delta after the choice finished";
        ch.tokens.insert(ch.tokens.end(), d.token_ids.begin(), d.token_ids.end());
        ch.text += d.text;
        ch.logprobs.insert(ch.logprobs.end(), d.logprobs.begin(), d.logprobs.end());
        ch.finish = d.finish_reason;
        if (d.stop_string) ch.stop_string = d.stop_string;
        if (d.stop_token) ch.stop_token = d.stop_token;
      }
      c.usage = out.usage;
      if (out.error) c.error = out.error;
      c.finished = out.finished;
      if (out.finished) done_.notify_all();
    };
  }
  Collected get(uint64_t id) {
    std::lock_guard lock(mutex_);
    return by_id_[id];
  }
  void wait_finished(const std::vector<uint64_t>& ids) {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] {
      for (uint64_t id : ids)
        if (!by_id_[id].finished) return false;
      return true;
    });
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  std::map<uint64_t, Collected> by_id_;
};

inline std::vector<TokenId> prompt_of(int length, int salt) {
  std::vector<TokenId> p{1};
  for (int i = 1; i < length; ++i) p.push_back(3 + (i * 37 + salt * 101) % (kVocab - 3));
  return p;
}

inline Request greedy(std::vector<TokenId> prompt, std::optional<int64_t> max_tokens) {
  Request r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  return r;
}

struct Rig {
  explicit Rig(EngineOptions options, int64_t eos_every = 0, int64_t context = 4096)
      : model(new FakeModel(kVocab, context, {kEos}, eos_every)),
        engine(std::unique_ptr<EngineModel>(model), stories_tokenizer(), options) {}
  void run() {
    while (engine.has_unfinished()) ASSERT_TRUE(engine.step());
  }
  // Declared first so that it outlives the engine, whose destructor aborts what is unfinished
  // and reports it through the callbacks.
  Outputs outputs;
  FakeModel* model;  // owned by the engine
  Engine engine;
};

inline EngineOptions small_options() {
  EngineOptions o;
  o.kv_blocks = 256;
  o.block_size = 4;
  o.max_num_batched_tokens = 32;
  o.max_num_seqs = 16;
  return o;
}

}  // namespace dq4::test
