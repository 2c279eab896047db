#include "openai_response.h"

namespace dq4::server {

using nlohmann::json;

namespace {

std::string token_text(const Tokenizer& tokenizer, TokenId id) {
  const TokenId ids[1] = {id};
  return tokenizer.decode(ids, false);
}

json bytes_json(const std::string& text) {
  json bytes = json::array();
  for (unsigned char c : text) bytes.push_back(int(c));
  return bytes;
}

}  // namespace

void LogprobsBuilder::add(const TokenLogprobs& token) {
  const std::string text = token_text(*tokenizer_, token.chosen.token);
  if (count_++ == 0) {
    json_ = endpoint_ == Endpoint::chat ? json{{"content", json::array()}}
                                        : json{{"tokens", json::array()},
                                               {"token_logprobs", json::array()},
                                               {"top_logprobs", json::array()},
                                               {"text_offset", json::array()}};
  }
  if (endpoint_ == Endpoint::chat) {
    json top = json::array();
    for (const TokenLogprob& t : token.top) {
      const std::string s = token_text(*tokenizer_, t.token);
      top.push_back({{"token", s}, {"logprob", t.logprob}, {"bytes", bytes_json(s)}});
    }
    json_["content"].push_back({{"token", text},
                                {"logprob", token.chosen.logprob},
                                {"bytes", bytes_json(text)},
                                {"top_logprobs", std::move(top)}});
    return;
  }
  // Completions: the chosen token is always among its position's top_logprobs, as in vLLM.
  json top = json::object();
  for (const TokenLogprob& t : token.top) top[token_text(*tokenizer_, t.token)] = t.logprob;
  top[text] = token.chosen.logprob;
  json_["tokens"].push_back(text);
  json_["token_logprobs"].push_back(token.chosen.logprob);
  json_["top_logprobs"].push_back(std::move(top));
  json_["text_offset"].push_back(text_offset_);
  text_offset_ += static_cast<int64_t>(text.size());
}

json LogprobsBuilder::take() {
  json out = std::move(json_);
  json_ = json();
  count_ = 0;
  return out;
}

json finish_reason_json(const std::optional<FinishReason>& reason) {
  if (!reason) return nullptr;
  return to_string(*reason);
}

json stop_reason_json(const ChoiceDelta& delta) {
  if (delta.stop_string) return *delta.stop_string;
  if (delta.stop_token) return *delta.stop_token;
  return nullptr;
}

json usage_json(const Usage& usage) {
  json u = {{"prompt_tokens", usage.prompt_tokens},
            {"completion_tokens", usage.completion_tokens},
            {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
  if (usage.cached_prompt_tokens > 0)
    u["prompt_tokens_details"] = {{"cached_tokens", usage.cached_prompt_tokens}};
  return u;
}

json response_object(const ResponseHeader& header, bool chunk) {
  const char* object = header.endpoint == Endpoint::chat
                           ? (chunk ? "chat.completion.chunk" : "chat.completion")
                           : "text_completion";
  return json{
      {"id", header.id}, {"object", object}, {"created", header.created}, {"model", header.model}};
}

std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string sse_event(const json& value) { return "data: " + dump(value) + "\n\n"; }

}  // namespace dq4::server
