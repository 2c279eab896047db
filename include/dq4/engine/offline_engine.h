#pragma once
// One request at a time through the serving engine, stepped on the calling thread: what
// `dq4 generate` and `dq4 chat` run. Everything a request can ask for (stop strings and ids,
// min_tokens, skip_special_tokens, logprobs, ...) therefore behaves exactly as in the server.
// The engine's prefix cache outlives each request, so a chat's next turn computes only the
// tokens its prompt adds (past the last full KV block the two share).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dq4/engine/engine.h"

namespace dq4 {

class ThreadPool;

// What one request produced.
struct GenerationOutput {
  std::vector<TokenId> prompt_ids;
  // Generated, as the engine gave them: a stop token that ended the request (an EOS or one of
  // stop_token_ids, also in stop_token) is the last.
  std::vector<TokenId> token_ids;
  std::string text;
  FinishReason finish_reason = FinishReason::length;
  std::optional<std::string> stop_string;  // the stop string that ended it
  std::optional<TokenId> stop_token;       // the token that ended it
  std::vector<TokenLogprobs> logprobs;     // one per token when the request asked for them
  int64_t cached_prompt_tokens = 0;        // prompt tokens found in the prefix cache
  double prompt_seconds = 0;               // from the call to the first token
  double decode_seconds = 0;               // from the first token to the last
};

class OfflineEngine {
 public:
  // As Engine's constructors: `model`, `tokenizer` and `pool` must outlive this.
  OfflineEngine(Model& model, const Tokenizer& tokenizer, const EngineOptions& options,
                ThreadPool* pool = nullptr);
  OfflineEngine(std::unique_ptr<EngineModel> model, const Tokenizer& tokenizer,
                const EngineOptions& options);

  // Runs `request` (one choice: n = 1) to its end, handing each piece of it to `on_delta` as
  // it comes (on this thread). Throws dq4::Error for an invalid request (Engine::add_request's
  // checks) or when the model failed; an exception from `on_delta` ends the request and is
  // rethrown.
  using DeltaCallback = std::function<void(const ChoiceDelta&)>;
  GenerationOutput generate(Request request, const DeltaCallback& on_delta = {});

  const EngineOptions& options() const { return engine_.options(); }
  EngineStats stats() const { return engine_.stats(); }

 private:
  Engine engine_;
};

}  // namespace dq4
