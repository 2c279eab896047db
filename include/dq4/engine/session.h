#pragma once
// One sequence and its own KV cache, fed by hand: the raw forward passes `dq4 perplexity` and
// `bench model` time and score (generation runs on the Engine: dq4/engine/offline_engine.h).
// Tokens are fed in prefill chunks; the cache is kept across calls.

#include <cstdint>
#include <span>
#include <vector>

#include "dq4/model/model.h"

namespace dq4 {

class ThreadPool;

class Session {
 public:
  // A cache for `context` tokens (at most the model's context); `chunk` = prefill chunk size.
  Session(Model& model, int64_t context, attention::KvType kv_type = attention::KvType::f32,
          int64_t chunk = 512, ThreadPool* pool = nullptr);

  int64_t context() const { return context_; }
  // The tokens the cache holds, in order.
  const std::vector<int32_t>& tokens() const { return tokens_; }
  // Forgets the cached tokens from position `keep` on (a chat turn that diverges).
  void truncate(int64_t keep);

  // Appends `tokens` and returns the logits after the last one ([vocab]). Throws dq4::Error when
  // they do not fit in the context.
  std::span<const float> feed(std::span<const int32_t> tokens);
  // Appends `tokens` and returns the logits after every one ([tokens.size(), vocab]).
  std::span<const float> feed_all(std::span<const int32_t> tokens);

 private:
  std::span<const float> run(std::span<const int32_t> tokens, bool all_logits);
  // Runs `tokens` from position `start` through the model in chunks; `length` is the sequence's
  // length the rope factors go by.
  void forward(std::span<const int32_t> tokens, int64_t start, int64_t length, bool all_logits);

  Model* model_;
  ThreadPool* pool_;
  int64_t context_, chunk_;
  KvCache cache_;
  std::vector<int32_t> block_table_;
  std::vector<int32_t> tokens_;
  bool long_rope_ = false;  // the cached keys are rotated with longrope's long factors
  std::vector<float> logits_;
};

}  // namespace dq4
