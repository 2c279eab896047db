#pragma once
// The routes: OpenAI's completions and chat completions, models, vLLM's tokenize and
// detokenize, health, metrics; the API key check; errors as OpenAI error objects.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "chat_output.h"
#include "dq4/constrain/constraint.h"
#include "dq4/engine/engine.h"
#include "dq4/tokenizer/chat_template.h"
#include "dq4/tokenizer/tokenizer.h"
#include "http_exchange.h"
#include "metrics.h"
#include "openai_request.h"
#include "openai_response.h"
#include "reasoning_parser.h"
#include "tool_parsers/tool_call_parser.h"

namespace dq4::server {

struct ServiceOptions {
  std::string model_name;
  std::string api_key;  // empty: no check
  // Tool calls' format: none means the chat template's (detect_tool_format), if it shows one.
  ToolFormat tool_format = ToolFormat::none;
  ReasoningFormat reasoning = ReasoningFormat::none;  // none: no reasoning_content
};

class OpenAiService {
 public:
  // `http_counters` reads the transport's numbers for /metrics. `compiler` (for the engine's
  // model, shared by every request: its cache holds the constraints recently asked for) must
  // outlive the service.
  OpenAiService(Engine& engine, const Tokenizer& tokenizer, const ChatTemplate* chat_template,
                constrain::Compiler& compiler, ServiceOptions options,
                std::function<HttpCounters()> http_counters);

  void handle(HttpRequest request, std::shared_ptr<Exchange> exchange);
  int64_t in_flight() const { return in_flight_; }  // generation requests not yet answered

 private:
  void completions(const HttpRequest& request, std::shared_ptr<Exchange> exchange);
  void chat(const HttpRequest& request, std::shared_ptr<Exchange> exchange);
  void generate(Endpoint endpoint, GenerationFields& fields,
                std::vector<std::vector<TokenId>> prompts, std::shared_ptr<Exchange> exchange,
                const ChatOutputOptions& chat_output = {});
  // How a chat request's output is parsed, from its tools and its rendered prompt; sets the
  // request's tool-call constraint when tool_choice requires a call.
  ChatOutputOptions chat_output(ChatRequest& chat, const std::string& prompt);
  HttpResponse models() const;
  HttpResponse tokenize(const HttpRequest& request) const;
  HttpResponse detokenize(const HttpRequest& request) const;
  void check_model(const std::string& model) const;
  std::string render_chat(const std::string& context, bool add_generation_prompt) const;
  std::string next_id(const char* prefix);

  Engine& engine_;
  const Tokenizer& tokenizer_;
  const ChatTemplate* chat_template_;
  constrain::Compiler& compiler_;
  const ServiceOptions options_;
  ToolFormat tool_format_;  // the option's, else the chat template's
  std::function<HttpCounters()> http_counters_;
  std::atomic<int64_t> in_flight_{0};
  std::atomic<uint64_t> next_id_{0};
  uint64_t id_salt_;
  int64_t started_;  // Unix seconds: /v1/models' "created"
};

}  // namespace dq4::server
