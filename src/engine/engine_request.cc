// Checks of the options and requests the engine takes.
#include <string>

#include "dq4/engine/engine.h"

namespace dq4 {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(what);
}

}  // namespace

void EngineOptions::validate() const {
  require(max_num_seqs > 0,
          "engine option max_num_seqs must be positive, not " + std::to_string(max_num_seqs));
  require(max_num_batched_tokens > 0,
          "engine option max_num_batched_tokens must be positive, not " +
              std::to_string(max_num_batched_tokens));
  // Every running sequence's decode token must fit in one step, or some would never be scheduled.
  require(max_num_batched_tokens >= max_num_seqs,
          "engine option max_num_batched_tokens (" + std::to_string(max_num_batched_tokens) +
              ") must be at least max_num_seqs (" + std::to_string(max_num_seqs) + ")");
  require(block_size > 0 && block_size <= 1024,
          "engine option block_size must be in [1, 1024], not " + std::to_string(block_size));
  require(kv_blocks >= 0,
          "engine option kv_blocks must not be negative, not " + std::to_string(kv_blocks));
  require(kv_blocks > 0 || kv_cache_memory > 0,
          "engine options kv_blocks and kv_cache_memory are both 0: the KV cache has no size");
  require(max_waiting > 0,
          "engine option max_waiting must be positive, not " + std::to_string(max_waiting));
  require(max_model_len >= 0,
          "engine option max_model_len must not be negative, not " + std::to_string(max_model_len));
}

void Request::validate() const {
  require(!prompt.empty(), "request: the prompt has no tokens");
  require(!max_tokens || *max_tokens >= 1,
          "request: max_tokens must be at least 1, not " + std::to_string(max_tokens.value_or(0)));
  require(min_tokens >= 0,
          "request: min_tokens must not be negative, not " + std::to_string(min_tokens));
  require(!max_tokens || min_tokens <= *max_tokens,
          "request: min_tokens " + std::to_string(min_tokens) + " exceeds max_tokens " +
              std::to_string(max_tokens.value_or(0)));
  for (const std::string& s : stop) require(!s.empty(), "request: a stop string is empty");
  require(detokenize || stop.empty(), "request: stop strings need detokenize (matched on text)");
  require(n >= 1 && n <= 128, "request: n must be in [1, 128], not " + std::to_string(n));
  require(!logprobs || (*logprobs >= 0 && *logprobs <= 20),
          "request: logprobs must be in [0, 20], not " + std::to_string(logprobs.value_or(0)));
  require(constraint || constraint_after.empty(),
          "request: constraint_after is set without a constraint");
  sampling.validate();
}

const char* to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::stop:
      return "stop";
    case FinishReason::length:
      return "length";
    case FinishReason::abort:
      return "abort";
  }
  return "abort";
}

}  // namespace dq4
