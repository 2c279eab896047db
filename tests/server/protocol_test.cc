// The OpenAI request bodies: what is accepted, what each field becomes, and the 400s (with the
// field named) for everything else.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api_error.h"
#include "openai_request.h"

namespace dq4::server {
namespace {

using nlohmann::json;

// Expects an ApiError with `status` naming `param` (empty: none) whose message has `fragment`.
template <class F>
void expect_api_error(F f, int status, const std::string& param, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "expected an ApiError mentioning '" << fragment << "'";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_EQ(e.param(), param) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

void expect_completion_error(const json& body, const std::string& param,
                             const std::string& fragment) {
  expect_api_error([&] { parse_completion_request(body.dump()); }, 400, param, fragment);
}

void expect_chat_error(const json& body, const std::string& param, const std::string& fragment) {
  expect_api_error([&] { parse_chat_request(body.dump()); }, 400, param, fragment);
}

const json kMessages = json::array({{{"role", "user"}, {"content", "Hi"}}});

TEST(CompletionRequest, ReadsEveryField) {
  const json body = {{"model", "m"},
                     {"prompt", "Once upon"},
                     {"max_tokens", 7},
                     {"temperature", 0.5},
                     {"top_p", 0.9},
                     {"top_k", 40},
                     {"min_p", 0.05},
                     {"presence_penalty", 0.5},
                     {"frequency_penalty", -0.5},
                     {"repetition_penalty", 1.1},
                     {"seed", 42},
                     {"n", 3},
                     {"stop", "\n\n"},
                     {"logprobs", 2},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}},
                     {"user", "u"},
                     {"stop_token_ids", {5, 6}},
                     {"min_tokens", 2},
                     {"ignore_eos", true},
                     {"skip_special_tokens", false},
                     {"include_stop_str_in_output", true},
                     {"echo", false},
                     {"suffix", nullptr},
                     {"best_of", 3},
                     {"logit_bias", json::object()}};
  const CompletionRequest c = parse_completion_request(body.dump());
  const Request& r = c.fields.request;
  EXPECT_EQ(c.fields.model, "m");
  ASSERT_EQ(c.prompts.size(), 1u);
  EXPECT_EQ(std::get<std::string>(c.prompts[0]), "Once upon");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.05f);
  EXPECT_FLOAT_EQ(r.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(r.sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(r.sampling.seed, 42u);
  EXPECT_EQ(r.n, 3);
  EXPECT_EQ(r.stop, std::vector<std::string>{"\n\n"});
  EXPECT_EQ(r.logprobs, 2);
  EXPECT_TRUE(c.fields.stream);
  EXPECT_TRUE(c.fields.include_usage);
  EXPECT_EQ(r.stop_token_ids, (std::vector<TokenId>{5, 6}));
  EXPECT_EQ(r.min_tokens, 2);
  EXPECT_TRUE(r.ignore_eos);
  EXPECT_FALSE(r.skip_special_tokens);
  EXPECT_TRUE(r.include_stop_str_in_output);
}

TEST(CompletionRequest, DefaultsAreOpenAIs) {
  const CompletionRequest c = parse_completion_request(R"({"model": "m", "prompt": "x"})");
  EXPECT_EQ(c.fields.request.max_tokens, 16);
  EXPECT_FLOAT_EQ(c.fields.request.sampling.temperature, 1.0f);
  EXPECT_EQ(c.fields.request.n, 1);
  EXPECT_FALSE(c.fields.request.logprobs.has_value());
  EXPECT_FALSE(c.fields.request.sampling.seed.has_value());
  EXPECT_FALSE(c.fields.stream);
  EXPECT_TRUE(c.add_special_tokens);
}

TEST(CompletionRequest, PromptForms) {
  auto prompts = [](const json& prompt) {
    return parse_completion_request(json{{"prompt", prompt}}.dump()).prompts;
  };
  EXPECT_EQ(std::get<std::vector<TokenId>>(prompts({1, 2, 3})[0]), (std::vector<TokenId>{1, 2, 3}));
  const auto texts = prompts({"a", "b"});
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_EQ(std::get<std::string>(texts[1]), "b");
  const auto lists = prompts({{1, 2}, {3}});
  ASSERT_EQ(lists.size(), 2u);
  EXPECT_EQ(std::get<std::vector<TokenId>>(lists[1]), (std::vector<TokenId>{3}));
  // Whole floats are integers, as in OpenAI's validation.
  EXPECT_EQ(
      parse_completion_request(R"({"prompt": "x", "max_tokens": 8.0})").fields.request.max_tokens,
      8);
}

TEST(CompletionRequest, BadFieldsAre400sNamingTheField) {
  expect_completion_error({{"model", "m"}}, "prompt", "required");
  expect_completion_error({{"prompt", json::array()}}, "prompt", "non-empty");
  expect_completion_error({{"prompt", {json::array()}}}, "prompt", "empty list of token ids");
  expect_completion_error({{"prompt", {1, -2}}}, "prompt", "out of range");
  expect_completion_error({{"prompt", {1, 2.5}}}, "prompt", "integer");
  expect_completion_error({{"prompt", 5}}, "prompt", "must be");
  expect_completion_error({{"prompt", "x"}, {"max_tokens", "16"}}, "max_tokens", "integer");
  expect_completion_error({{"prompt", "x"}, {"max_tokens", 0}}, "max_tokens", "between");
  expect_completion_error({{"prompt", "x"}, {"max_tokens", 1.5}}, "max_tokens", "integer");
  expect_completion_error({{"prompt", "x"}, {"temperature", "hot"}}, "temperature", "number");
  expect_completion_error({{"prompt", "x"}, {"temperature", 2.5}}, "temperature", "between");
  expect_completion_error({{"prompt", "x"}, {"top_p", 0}}, "top_p", "greater than 0");
  expect_completion_error({{"prompt", "x"}, {"top_p", true}}, "top_p", "number");
  expect_completion_error({{"prompt", "x"}, {"n", 0}}, "n", "between");
  expect_completion_error({{"prompt", "x"}, {"n", 129}}, "n", "between");
  expect_completion_error({{"prompt", "x"}, {"stream", "yes"}}, "stream", "boolean");
  expect_completion_error({{"prompt", "x"}, {"stream_options", {{"include_usage", true}}}},
                          "stream_options", "only allowed when 'stream' is true");
  expect_completion_error({{"prompt", "x"}, {"stream", true}, {"stream_options", {{"x", 1}}}},
                          "stream_options.x", "Unrecognized request argument");
  expect_completion_error({{"prompt", "x"}, {"stop", 3}}, "stop", "string");
  expect_completion_error({{"prompt", "x"}, {"stop", {"a", 3}}}, "stop", "string");
  expect_completion_error({{"prompt", "x"}, {"stop", ""}}, "stop", "empty");
  expect_completion_error({{"prompt", "x"}, {"logprobs", 21}}, "logprobs", "between");
  expect_completion_error({{"prompt", "x"}, {"logprobs", true}}, "logprobs", "integer");
  expect_completion_error({{"prompt", "x"}, {"seed", "1"}}, "seed", "integer");
  expect_completion_error({{"prompt", "x"}, {"echo", true}}, "echo", "not supported");
  expect_completion_error({{"prompt", "x"}, {"suffix", "s"}}, "suffix", "not supported");
  expect_completion_error({{"prompt", "x"}, {"best_of", 2}}, "best_of", "not supported");
  expect_completion_error({{"prompt", "x"}, {"logit_bias", {{"5", 1}}}}, "logit_bias",
                          "not supported");
  expect_completion_error({{"prompt", "x"}, {"frobnicate", 1}}, "frobnicate",
                          "Unrecognized request argument supplied: frobnicate");
  expect_completion_error({{"prompt", "x"}, {"messages", kMessages}}, "messages", "Unrecognized");
  expect_completion_error({{"prompt", {"a", "b"}}, {"n", 100}}, "n", "at most 128");
}

TEST(CompletionRequest, MalformedBodies) {
  for (const char* body : {"", "{", "[]", "null", "\"x\"", "{\"prompt\": \"x\",}", "{\"a\": 1} x",
                           "{\"prompt\": \"\xff\"}"})
    expect_api_error([&] { parse_completion_request(body); }, 400, "", "");
  std::string deep = "{\"prompt\": \"x\", \"user\": ";
  for (int i = 0; i < 100000; ++i) deep += "[";
  expect_api_error([&] { parse_completion_request(deep); }, 400, "", "nested too deeply");
}

TEST(ChatRequest, ReadsMessagesToolsAndLogprobs) {
  const json tools = json::array(
      {{{"type", "function"},
        {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}});
  const json body = {
      {"model", "m"},
      {"messages",
       {{{"role", "system"}, {"content", "Be brief."}},
        {{"role", "user"},
         {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}},
        {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array()}}}},
      {"tools", tools},
      {"tool_choice", "auto"},
      {"logprobs", true},
      {"top_logprobs", 3},
      {"max_completion_tokens", 9},
      {"max_tokens", 5},
      {"chat_template_kwargs", {{"enable_thinking", false}}}};
  const ChatRequest c = parse_chat_request(body.dump());
  EXPECT_TRUE(c.logprobs);
  EXPECT_EQ(c.fields.request.logprobs, 3);
  EXPECT_EQ(c.fields.request.max_tokens, 9);  // max_completion_tokens wins
  EXPECT_FALSE(c.add_special_tokens);
  EXPECT_TRUE(c.add_generation_prompt);
  const json context = json::parse(c.template_context);
  EXPECT_EQ(context["messages"][1]["content"], "a\nb");  // text parts joined
  EXPECT_TRUE(context["messages"][2]["content"].is_null());
  EXPECT_EQ(context["tools"], tools);
  EXPECT_EQ(context["enable_thinking"], false);
  EXPECT_FALSE(parse_chat_request(json{{"messages", kMessages}}.dump()).fields.request.max_tokens);
  EXPECT_EQ(parse_chat_request(json{{"messages", kMessages}, {"logprobs", true}}.dump())
                .fields.request.logprobs,
            0);
}

TEST(ChatRequest, BadFieldsAre400sNamingTheField) {
  expect_chat_error({{"model", "m"}}, "messages", "required");
  expect_chat_error({{"messages", json::array()}}, "messages", "non-empty");
  expect_chat_error({{"messages", {"hi"}}}, "messages[0]", "object");
  expect_chat_error({{"messages", {{{"role", "robot"}, {"content", "x"}}}}}, "messages[0].role",
                    "one of");
  expect_chat_error({{"messages", {{{"content", "x"}}}}}, "messages[0].role", "one of");
  expect_chat_error({{"messages", {{{"role", "user"}, {"content", 5}}}}}, "messages[0].content",
                    "string");
  expect_chat_error(
      {{"messages",
        {{{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", "x"}}}}}}}},
      "messages[0].content", "not supported");
  expect_chat_error({{"messages", kMessages}, {"top_logprobs", 2}}, "top_logprobs",
                    "requires 'logprobs'");
  expect_chat_error({{"messages", kMessages}, {"logprobs", 1}}, "logprobs", "boolean");
  expect_chat_error({{"messages", kMessages}, {"tools", {{{"type", "function"}}}}},
                    "tools[0].function", "object");
  expect_chat_error({{"messages", kMessages}, {"tool_choice", "required"}}, "tool_choice",
                    "needs 'tools'");
  expect_chat_error({{"messages", kMessages}, {"response_format", {{"type", "json_xml"}}}},
                    "response_format.type", "json_xml");
  expect_chat_error({{"messages", kMessages}, {"prompt", "x"}}, "prompt", "Unrecognized");
  expect_chat_error({{"messages", kMessages}, {"max_completion_tokens", -1}},
                    "max_completion_tokens", "between");
}

TEST(TokenizeRequest, PromptOrMessages) {
  const TokenizeRequest p = parse_tokenize_request(R"({"prompt": "hello"})");
  EXPECT_EQ(p.prompt, "hello");
  EXPECT_TRUE(p.add_special_tokens);
  const TokenizeRequest m = parse_tokenize_request(json{{"messages", kMessages}}.dump());
  EXPECT_FALSE(m.prompt);
  EXPECT_FALSE(m.add_special_tokens);
  EXPECT_EQ(json::parse(m.template_context)["messages"], kMessages);
  expect_api_error([] { parse_tokenize_request("{}"); }, 400, "prompt", "required");
  expect_api_error([] { parse_tokenize_request(R"({"prompt": 1})"); }, 400, "prompt", "string");
  EXPECT_EQ(parse_detokenize_request(R"({"tokens": [1, 2]})").tokens, (std::vector<TokenId>{1, 2}));
  expect_api_error([] { parse_detokenize_request(R"({"tokens": "1"})"); }, 400, "tokens", "array");
}

TEST(ApiError, BodyIsAnOpenAIErrorObject) {
  const json body = json::parse(bad_request("temperature", "'temperature' is bad").body());
  EXPECT_EQ(body["error"]["message"], "'temperature' is bad");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["param"], "temperature");
  EXPECT_TRUE(body["error"]["code"].is_null());
  const ApiError busy = ApiError(503, "busy", "", "overloaded").retry_after(2);
  const HttpResponse r = busy.response();
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "server_error");
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "overloaded");
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].first, "Retry-After");
  EXPECT_EQ(r.headers[0].second, "2");
}

}  // namespace
}  // namespace dq4::server
