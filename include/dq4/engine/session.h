#pragma once
// One sequence and its own KV cache: what `dq4 generate`, `chat`, `perplexity` and `bench model`
// run (the server's engine shares one cache among many sequences instead). Tokens are fed in
// prefill chunks; the cache is kept across calls, so a chat's next turn only computes its new
// tokens.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dq4/engine/sampler.h"
#include "dq4/model/model.h"
#include "dq4/tokenizer/tokenizer.h"

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

  Model* model_;
  ThreadPool* pool_;
  int64_t context_, chunk_;
  KvCache cache_;
  std::vector<int32_t> block_table_;
  std::vector<int32_t> tokens_;
  std::vector<float> logits_;
};

// When generation stops.
struct StopConditions {
  int64_t max_tokens = 256;
  std::vector<std::string> stop_strings;  // the text is cut before the first one found
  std::vector<int32_t> stop_ids;          // usually the model's eos ids
};

struct GenerationResult {
  std::vector<int32_t> prompt_ids, generated_ids;
  std::string text;           // the generated text (without a stop string that ended it)
  std::string finish_reason;  // "stop" (eos id or stop string), "length" (max tokens or context)
  double prompt_seconds = 0;  // prefill of the new prompt tokens, first token sampled
  double decode_seconds = 0;  // every later token
  int64_t prompt_tokens_computed = 0;  // prompt tokens not already in the cache
};

// Generates from `prompt` after what the session holds (reusing the common prefix), streaming
// each new piece of text to `on_text` (never a broken UTF-8 character; text that may still turn
// into a stop string is held back until it cannot).
GenerationResult generate(Session& session, const Tokenizer& tokenizer,
                          std::span<const int32_t> prompt, const SamplingParams& sampling,
                          const StopConditions& stop,
                          const std::function<void(std::string_view)>& on_text = {});

}  // namespace dq4
