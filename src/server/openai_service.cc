#include "openai_service.h"

#include <chrono>
#include <cstdio>
#include <random>

#include "api_error.h"
#include "generation_job.h"
#include "openai_request.h"
#include "openai_response.h"
#include "tool_grammar.h"

namespace dq4::server {
namespace {

using nlohmann::json;

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Compares in time that depends only on the expected key's length.
bool same_key(const std::string& given, const std::string& expected) {
  unsigned diff = given.size() != expected.size();
  for (size_t i = 0; i < expected.size(); ++i)
    diff |= static_cast<unsigned char>(expected[i]) ^
            static_cast<unsigned char>(i < given.size() ? given[i] : 0);
  return diff == 0;
}

HttpResponse json_response(const json& body) {
  return HttpResponse{200, "application/json", dump(body), {}};
}

void require_method(const HttpRequest& request, const char* method) {
  if (request.method != method)
    throw ApiError(405, "method " + request.method + " is not allowed on " + request.path);
}

}  // namespace

OpenAiService::OpenAiService(Engine& engine, const Tokenizer& tokenizer,
                             const ChatTemplate* chat_template, constrain::Compiler& compiler,
                             ServiceOptions options, std::function<HttpCounters()> http_counters)
    : engine_(engine),
      tokenizer_(tokenizer),
      chat_template_(chat_template),
      compiler_(compiler),
      options_(std::move(options)),
      tool_format_(options_.tool_format != ToolFormat::none || !chat_template
                       ? options_.tool_format
                       : detect_tool_format(chat_template->source())),
      http_counters_(std::move(http_counters)),
      id_salt_(std::random_device{}() * 0x9e3779b97f4a7c15ull),
      started_(unix_seconds()) {}

void OpenAiService::handle(HttpRequest request, std::shared_ptr<Exchange> exchange) {
  try {
    const std::string& path = request.path;
    if (path == "/health") {
      require_method(request, "GET");
      return exchange->respond(HttpResponse{200, "text/plain", "", {}});
    }
    if (path == "/metrics") {
      require_method(request, "GET");
      return exchange->respond(
          HttpResponse{200,
                       "text/plain; version=0.0.4; charset=utf-8",
                       render_metrics(engine_.stats(), http_counters_(), options_.model_name),
                       {}});
    }
    if (!options_.api_key.empty() && !same_key(request.authorization, "Bearer " + options_.api_key))
      throw ApiError(401, "invalid or missing API key (Authorization: Bearer <key>)", "",
                     "invalid_api_key");
    if (path == "/v1/models") {
      require_method(request, "GET");
      return exchange->respond(models());
    }
    if (path == "/v1/completions") {
      require_method(request, "POST");
      return completions(request, exchange);  // not moved: the catch below answers
    }
    if (path == "/v1/chat/completions") {
      require_method(request, "POST");
      return chat(request, exchange);
    }
    if (path == "/tokenize") {
      require_method(request, "POST");
      return exchange->respond(tokenize(request));
    }
    if (path == "/detokenize") {
      require_method(request, "POST");
      return exchange->respond(detokenize(request));
    }
    throw ApiError(404, "no route " + request.method + " " + path);
  } catch (const ApiError& e) {
    exchange->respond(e.response());
  }
}

void OpenAiService::check_model(const std::string& model) const {
  if (!model.empty() && model != options_.model_name)
    throw ApiError(404,
                   "The model '" + model + "' does not exist (this server serves '" +
                       options_.model_name + "')",
                   "model", "model_not_found");
}

std::string OpenAiService::next_id(const char* prefix) {
  char id[64];
  std::snprintf(id, sizeof id, "%s-%016llx%08llx", prefix,
                static_cast<unsigned long long>(id_salt_),
                static_cast<unsigned long long>(next_id_++));
  return id;
}

std::string OpenAiService::render_chat(const std::string& context,
                                       bool add_generation_prompt) const {
  if (!chat_template_)
    throw ApiError(400, "this model has no chat template (give dq4 serve --chat-template FILE)",
                   "messages");
  try {
    return chat_template_->render(context, add_generation_prompt);
  } catch (const Error& e) {
    throw bad_request("messages", std::string("the chat template failed: ") + e.what());
  }
}

namespace {

// Prompts as token ids, checked against the context length as vLLM does.
void check_lengths(const std::vector<std::vector<TokenId>>& prompts,
                   const std::optional<int64_t>& max_tokens, int64_t max_model_len) {
  for (const auto& ids : prompts) {
    const int64_t n = static_cast<int64_t>(ids.size());
    if (n == 0) throw bad_request("prompt", "the prompt is empty (no tokens)");
    if (n >= max_model_len)
      throw bad_request("prompt",
                        "This model's maximum context length is " + std::to_string(max_model_len) +
                            " tokens. However, your prompt has " + std::to_string(n) + " tokens.");
    if (max_tokens && n + *max_tokens > max_model_len)
      throw bad_request("max_tokens",
                        "This model's maximum context length is " + std::to_string(max_model_len) +
                            " tokens. However, you requested " + std::to_string(n + *max_tokens) +
                            " tokens (" + std::to_string(n) + " in the prompt, " +
                            std::to_string(*max_tokens) +
                            " for the completion). Please reduce the length.");
  }
}

}  // namespace

void OpenAiService::completions(const HttpRequest& request, std::shared_ptr<Exchange> exchange) {
  CompletionRequest c = parse_completion_request(request.body);
  check_model(c.fields.model);
  std::vector<std::vector<TokenId>> prompts;
  for (Prompt& p : c.prompts) {
    if (auto* text = std::get_if<std::string>(&p))
      prompts.push_back(tokenizer_.encode(*text, c.add_special_tokens));
    else
      prompts.push_back(std::move(std::get<std::vector<TokenId>>(p)));
  }
  generate(Endpoint::completions, c.fields, std::move(prompts), std::move(exchange));
}

void OpenAiService::chat(const HttpRequest& request, std::shared_ptr<Exchange> exchange) {
  ChatRequest c = parse_chat_request(request.body);
  check_model(c.fields.model);
  const std::string text = render_chat(c.template_context, c.add_generation_prompt);
  const ChatOutputOptions output = chat_output(c, text);
  std::vector<std::vector<TokenId>> prompts = {tokenizer_.encode(text, c.add_special_tokens)};
  generate(Endpoint::chat, c.fields, std::move(prompts), std::move(exchange), output);
}

ChatOutputOptions OpenAiService::chat_output(ChatRequest& chat, const std::string& prompt) {
  ChatOutputOptions output;
  if (options_.reasoning != ReasoningFormat::none) {
    output.reasoning = true;
    output.think_start = think_start(options_.reasoning, prompt);
  }
  switch (chat.tools.choice) {
    case ChatTools::Choice::none:
      break;  // tools are still shown to the model (as vLLM does), the output is not parsed
    case ChatTools::Choice::automatic:
      output.tools = tool_format_;
      break;
    case ChatTools::Choice::required:
    case ChatTools::Choice::named:
      // A template without a known format gets Llama 3's plain JSON calls.
      output.tools = tool_format_ == ToolFormat::none ? ToolFormat::llama3_json : tool_format_;
      if (chat.fields.constraint)
        throw bad_request("tool_choice",
                          "'tool_choice' \"required\" or a named function cannot be combined "
                          "with '" +
                              chat.fields.constraint->param + "'");
      try {
        // Filled field by field: GCC 12 warns of a maybe-uninitialized string in the nested
        // aggregate temporary the braced form builds.
        OutputConstraint tools_constraint;
        tools_constraint.spec.kind = constrain::ConstraintSpec::Kind::grammar;
        tools_constraint.spec.text = tool_call_grammar(output.tools, chat.tools);
        tools_constraint.param = "tools";
        chat.fields.constraint = std::move(tools_constraint);
      } catch (const constrain::ConstraintError& e) {
        throw bad_request("tools", std::string("'tools' cannot be used: ") + e.what());
      }
      break;
  }
  output.single_call = !chat.tools.parallel_tool_calls;
  // The answer is constrained, not the reasoning before it.
  if (chat.fields.constraint && output.reasoning && output.think_start != ThinkStart::closed)
    chat.fields.request.constraint_after = tokenizer_.encode(std::string(kThinkEnd), false);
  // Mistral's [TOOL_CALLS] is a special token in its tokenizers: kept in the text to be parsed.
  if (output.tools == ToolFormat::mistral) chat.fields.request.skip_special_tokens = false;
  return output;
}

void OpenAiService::generate(Endpoint endpoint, GenerationFields& fields,
                             std::vector<std::vector<TokenId>> prompts,
                             std::shared_ptr<Exchange> exchange,
                             const ChatOutputOptions& chat_output) {
  check_lengths(prompts, fields.request.max_tokens, engine_.max_model_len());
  // Compiled here, on the connection's thread: a new schema's cost never holds up the engine.
  if (fields.constraint) {
    try {
      fields.request.constraint = compiler_.compile(fields.constraint->spec);
    } catch (const constrain::ConstraintError& e) {
      throw bad_request(fields.constraint->param,
                        "'" + fields.constraint->param + "' cannot be used: " + e.what());
    }
  }
  JobShape shape;
  shape.header = ResponseHeader{endpoint, next_id(endpoint == Endpoint::chat ? "chatcmpl" : "cmpl"),
                                options_.model_name, unix_seconds()};
  shape.stream = fields.stream;
  shape.include_usage = fields.include_usage;
  shape.n = fields.request.n;
  shape.prompts = prompts.size();
  shape.chat_output = chat_output;
  auto job = std::make_shared<GenerationJob>(shape, engine_, tokenizer_, exchange, in_flight_);
  exchange->on_disconnect([weak = std::weak_ptr<GenerationJob>(job)] {
    if (auto j = weak.lock()) j->cancel();
  });
  for (size_t i = 0; i < prompts.size(); ++i) {
    Request r = fields.request;
    r.prompt = std::move(prompts[i]);
    try {
      job->add_request_id(engine_.add_request(std::move(r), job->callback(i)));
    } catch (const EngineOverloaded& e) {
      return job->fail(
          ApiError(503, std::string("the server is overloaded: ") + e.what(), "", "overloaded")
              .retry_after(1));
    } catch (const EngineStopped&) {
      return job->fail(ApiError(503, "the server is shutting down").retry_after(1));
    } catch (const Error& e) {
      return job->fail(bad_request("", e.what()));
    }
  }
  job->start();
}

HttpResponse OpenAiService::models() const {
  return json_response({{"object", "list"},
                        {"data", json::array({{{"id", options_.model_name},
                                               {"object", "model"},
                                               {"created", started_},
                                               {"owned_by", "dq4"},
                                               {"root", options_.model_name},
                                               {"parent", nullptr},
                                               {"max_model_len", engine_.max_model_len()}}})}});
}

HttpResponse OpenAiService::tokenize(const HttpRequest& request) const {
  TokenizeRequest t = parse_tokenize_request(request.body);
  if (t.model) check_model(*t.model);
  const std::string text =
      t.prompt ? *t.prompt : render_chat(t.template_context, t.add_generation_prompt);
  const std::vector<TokenId> ids = tokenizer_.encode(text, t.add_special_tokens);
  return json_response({{"count", ids.size()},
                        {"max_model_len", engine_.max_model_len()},
                        {"tokens", ids},
                        {"token_strs", nullptr}});
}

HttpResponse OpenAiService::detokenize(const HttpRequest& request) const {
  DetokenizeRequest d = parse_detokenize_request(request.body);
  if (d.model) check_model(*d.model);
  return json_response({{"prompt", tokenizer_.decode(d.tokens, false)}});
}

}  // namespace dq4::server
