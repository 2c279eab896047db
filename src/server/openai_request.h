#pragma once
// The OpenAI request bodies the server accepts, parsed and validated into typed requests.
// Malformed JSON, wrong types, values out of range, fields OpenAI does not know and features dq4
// does not offer are ApiErrors (400) naming the field; nothing here needs the model.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api_error.h"
#include "chat_tools.h"
#include "dq4/engine/engine.h"
#include "structured_output.h"

namespace dq4::server {

// What both generation endpoints share. `request` is complete but for its prompt.
struct GenerationFields {
  std::string model;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with usage
  Request request;
  // What the output must match, still to be compiled (into request.constraint) for the model.
  std::optional<OutputConstraint> constraint;
};

using Prompt = std::variant<std::string, std::vector<TokenId>>;

// POST /v1/completions.
struct CompletionRequest {
  GenerationFields fields;
  std::vector<Prompt> prompts;     // one or more (OpenAI's batch form); choices per prompt: n
  bool add_special_tokens = true;  // text prompts get the tokenizer's BOS, as in vLLM
};

// POST /v1/chat/completions.
struct ChatRequest {
  GenerationFields fields;
  // The chat template's variables as JSON: {"messages": [...], "tools": [...], ...}, the
  // messages' content lists of text parts joined into strings.
  std::string template_context;
  bool add_generation_prompt = true;
  bool add_special_tokens = false;  // the template writes BOS itself
  bool logprobs = false;            // chat's shape: logprobs true + top_logprobs k
  ChatTools tools;
};

// POST /tokenize: a prompt, or messages rendered through the chat template.
struct TokenizeRequest {
  std::optional<std::string> model;
  std::optional<std::string> prompt;
  std::string template_context;  // when messages were given
  bool add_generation_prompt = true;
  bool add_special_tokens = true;
};

// POST /detokenize.
struct DetokenizeRequest {
  std::optional<std::string> model;
  std::vector<TokenId> tokens;
};

// The body as JSON: an object, nested at most 64 deep, else an ApiError.
nlohmann::json parse_json_body(std::string_view body);

CompletionRequest parse_completion_request(std::string_view body);
ChatRequest parse_chat_request(std::string_view body);
TokenizeRequest parse_tokenize_request(std::string_view body);
DetokenizeRequest parse_detokenize_request(std::string_view body);

}  // namespace dq4::server
