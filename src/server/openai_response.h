#pragma once
// The JSON the OpenAI endpoints answer with: whole responses, streamed chunks (server-sent
// events), logprobs in each endpoint's shape.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dq4/engine/engine.h"
#include "dq4/tokenizer/tokenizer.h"

namespace dq4::server {

enum class Endpoint { completions, chat };

// What every response and chunk of one request carries.
struct ResponseHeader {
  Endpoint endpoint = Endpoint::completions;
  std::string id;  // cmpl-... / chatcmpl-...
  std::string model;
  int64_t created = 0;  // Unix seconds
};

// A choice's tokens' logprobs so far, in the endpoint's shape.
class LogprobsBuilder {
 public:
  LogprobsBuilder(Endpoint endpoint, const Tokenizer& tokenizer)
      : endpoint_(endpoint), tokenizer_(&tokenizer) {}
  void add(const TokenLogprobs& token);
  bool empty() const { return count_ == 0; }
  // {"tokens", "token_logprobs", "top_logprobs", "text_offset"} or {"content": [...]}; then
  // starts afresh (text offsets keep counting).
  nlohmann::json take();

 private:
  Endpoint endpoint_;
  const Tokenizer* tokenizer_;
  nlohmann::json json_;
  size_t count_ = 0;
  int64_t text_offset_ = 0;
};

// "stop", "length" or "abort"; the stop_reason vLLM adds (the stop string or token id).
nlohmann::json finish_reason_json(const std::optional<FinishReason>& reason);
nlohmann::json stop_reason_json(const ChoiceDelta& delta);
nlohmann::json usage_json(const Usage& usage);

// The object around choices: id, object, created, model.
nlohmann::json response_object(const ResponseHeader& header, bool chunk);

// "data: <json>\n\n" and the last event.
std::string sse_event(const nlohmann::json& value);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

// JSON text; invalid UTF-8 (never produced, but text comes from token bytes) becomes U+FFFD.
std::string dump(const nlohmann::json& value);

}  // namespace dq4::server
