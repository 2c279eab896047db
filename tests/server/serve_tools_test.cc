// Tool calls and reasoning through a live `dq4 serve` on a tiny random-weight Qwen3 model:
// tool_choice "required" and named functions are held to the tools' schemas by a grammar, so
// every seeded output must parse into valid calls in each tool-call format; streamed calls
// reassemble into the whole response's; under "auto" calls are parsed out (the first only with
// parallel_tool_calls false), under "none" they stay content; reasoning comes apart from content
// and a schema holds only the answer; the official openai npm client
// (tests/js/openai_tools_test.mjs) reads all of it.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "../cli_runner.h"
#include "http_client.h"
#include "serve_process.h"
#include "sse_events.h"

namespace dq4::test {
namespace {

using nlohmann::json;
using server::HttpClient;
using server::HttpReply;

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "enum": ["Paris", "Oslo", "Zürich"]},
      "days": {"type": "integer", "minimum": 1, "maximum": 7},
      "metric": {"type": "boolean"}},
     "required": ["city", "days"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "now"}}])");

// The tools' schemas checked by hand (an independent reading of what the grammar must enforce).
void expect_valid_call(const json& call) {
  ASSERT_EQ(call["type"], "function") << call;
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u) << call;
  const std::string name = call["function"]["name"];
  const json args = json::parse(call["function"]["arguments"].get<std::string>());
  ASSERT_TRUE(args.is_object()) << call;
  if (name == "now") {
    EXPECT_TRUE(args.empty()) << call;
    return;
  }
  ASSERT_EQ(name, "get_weather") << call;
  const std::set<std::string> cities = {"Paris", "Oslo", "Zürich"};
  ASSERT_TRUE(args.contains("city") && args["city"].is_string()) << call;
  EXPECT_TRUE(cities.count(args["city"])) << call;
  ASSERT_TRUE(args.contains("days") && args["days"].is_number_integer()) << call;
  EXPECT_GE(args["days"].get<int>(), 1);
  EXPECT_LE(args["days"].get<int>(), 7);
  for (const auto& [key, value] : args.items()) {
    EXPECT_TRUE(key == "city" || key == "days" || key == "metric") << call;
    if (key == "metric") {
      EXPECT_TRUE(value.is_boolean()) << call;
    }
  }
}

json chat_body(json extra) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}},
               {"tools", kTools},
               {"max_tokens", 180}};
  body.update(extra);
  return body;
}

HttpReply post(int port, const json& body) {
  HttpClient client("127.0.0.1", port);
  client.send("POST", "/v1/chat/completions", body.dump(), "");
  return client.read_reply();
}

json chat(int port, const json& body) {
  const HttpReply r = post(port, body);
  EXPECT_EQ(r.status, 200) << r.body;
  return json::parse(r.body);
}

// The streamed deltas of choice 0 joined: content, reasoning_content, tool calls by index.
struct Joined {
  std::string content, reasoning, finish_reason;
  json calls = json::array();
};

Joined stream(int port, json body) {
  body["stream"] = true;
  HttpClient client("127.0.0.1", port);
  client.send("POST", "/v1/chat/completions", body.dump(), "");
  EXPECT_EQ(client.read_head().status, 200);
  Joined j;
  const bool done = read_events(client, [&j](const json& chunk) {
    for (const json& c : chunk["choices"]) {
      const json& d = c["delta"];
      if (d.contains("content")) j.content += d["content"].get<std::string>();
      if (d.contains("reasoning_content")) j.reasoning += d["reasoning_content"].get<std::string>();
      for (const json& t : d.value("tool_calls", json::array())) {
        const size_t index = t["index"];
        if (index == j.calls.size()) {  // a call's first delta: id, type and name
          j.calls.push_back(
              {{"id", t.at("id")},
               {"type", t.at("type")},
               {"function", {{"name", t["function"].at("name")}, {"arguments", ""}}}});
        }
        EXPECT_LT(index, j.calls.size());
        j.calls[index]["function"]["arguments"] =
            j.calls[index]["function"]["arguments"].get<std::string>() +
            t["function"]["arguments"].get<std::string>();
      }
      if (!c["finish_reason"].is_null()) j.finish_reason = c["finish_reason"];
    }
    return true;
  });
  EXPECT_TRUE(done) << "the stream ended without data: [DONE]";
  return j;
}

class ServeTools : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    model_ = new std::string(std::filesystem::temp_directory_path() /
                             ("dq4-serve-tools-" + std::to_string(::getpid())));
    const CliResult r = run_dq4("synth -o " + shell_quote(*model_) + " --preset tiny-qwen3");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*model_);
    delete model_;
  }
  // A server with the compact tool template (and the qwen3 reasoning parser: under it, the tool
  // grammar waits for </think> unless the prompt closed the block).
  static std::vector<std::string> args(const std::string& parser, bool reasoning = false) {
    std::vector<std::string> a = {*model_,
                                  "--chat-template",
                                  DQ4_SOURCE_DIR "/tests/server/tools_template.jinja",
                                  "--kv-cache-memory",
                                  "64MiB",
                                  "--threads",
                                  "1"};
    if (!parser.empty()) a.insert(a.end(), {"--tool-call-parser", parser});
    if (reasoning) a.insert(a.end(), {"--reasoning-parser", "qwen3"});
    return a;
  }
  static std::string* model_;
};
std::string* ServeTools::model_ = nullptr;

TEST_P(ServeTools, RequiredCallsAlwaysParseAndFitTheSchemas) {
  ServeProcess server(args(GetParam()));
  // One seeded request of 12 choices, one call each (the grammar tests cover parallel calls).
  const json r = chat(
      server.port(),
      chat_body(
          {{"tool_choice", "required"}, {"parallel_tool_calls", false}, {"n", 12}, {"seed", 5}}));
  ASSERT_EQ(r["choices"].size(), 12u);
  for (const json& c : r["choices"]) {
    SCOPED_TRACE(c.dump());
    EXPECT_EQ(c["finish_reason"], "tool_calls");
    ASSERT_TRUE(c["message"].contains("tool_calls"));
    ASSERT_EQ(c["message"]["tool_calls"].size(), 1u);
    EXPECT_TRUE(c["message"]["content"].is_null());
    for (const json& call : c["message"]["tool_calls"]) expect_valid_call(call);
  }
  // (Which function a random model picks is its own business: that the grammar admits each one
  // is tool_grammar_test's.)
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

INSTANTIATE_TEST_SUITE_P(Formats, ServeTools, ::testing::Values("", "llama3_json", "mistral"),
                         [](const auto& info) {
                           return info.param.empty() ? std::string("FromTemplate") : info.param;
                         });

class ServeToolsHermes : public ServeTools {};

TEST_F(ServeToolsHermes, NamedCallStreamedEqualsWholeAndTwoTurnsRender) {
  ServeProcess server(args(""));
  const json body =
      chat_body({{"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
                 {"seed", 11}});
  const json whole = chat(server.port(), body);
  const json& message = whole["choices"][0]["message"];
  ASSERT_EQ(message["tool_calls"].size(), 1u) << whole;
  expect_valid_call(message["tool_calls"][0]);
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "tool_calls");

  const Joined streamed = stream(server.port(), body);
  ASSERT_EQ(streamed.calls.size(), 1u);
  expect_valid_call(streamed.calls[0]);
  EXPECT_EQ(streamed.calls[0]["function"], message["tool_calls"][0]["function"]);
  EXPECT_EQ(streamed.content, "");
  EXPECT_EQ(streamed.finish_reason, "tool_calls");

  // The call and its result go back through the template; the model answers (auto: parsed).
  json turn2 = chat_body({{"seed", 3}, {"max_tokens", 8}});
  turn2["messages"].push_back(message);
  turn2["messages"].push_back({{"role", "tool"},
                               {"tool_call_id", message["tool_calls"][0]["id"]},
                               {"content", "sunny, 21 C"}});
  const json answer = chat(server.port(), turn2);
  EXPECT_EQ(answer["choices"][0]["finish_reason"], "length") << answer;
  EXPECT_GT(answer["usage"]["prompt_tokens"].get<int>(),
            whole["usage"]["prompt_tokens"].get<int>() + 20);
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

TEST_F(ServeToolsHermes, ReasoningApartFromContent) {
  ServeProcess server(args("", true));
  // A prompt left inside <think>: a random model never closes it, so all it writes is reasoning.
  const json open = chat_body({{"seed", 4},
                               {"max_tokens", 12},
                               {"tool_choice", "none"},
                               {"chat_template_kwargs", {{"open_think", true}}}});
  const json whole = chat(server.port(), open);
  const json& message = whole["choices"][0]["message"];
  ASSERT_TRUE(message["reasoning_content"].is_string()) << whole;
  EXPECT_FALSE(message["reasoning_content"].get<std::string>().empty());
  EXPECT_EQ(message["content"], "");
  const Joined streamed = stream(server.port(), open);
  EXPECT_EQ(streamed.reasoning, message["reasoning_content"]);
  EXPECT_EQ(streamed.content, "");

  // A schema holds the answer, not the thinking: inside <think> the model writes freely (a
  // schema held from the first token would make it write a boolean and stop).
  json schema_open = open;
  schema_open["response_format"] = {
      {"type", "json_schema"}, {"json_schema", {{"name", "b"}, {"schema", {{"type", "boolean"}}}}}};
  const json thinking = chat(server.port(), schema_open);
  EXPECT_EQ(thinking["choices"][0]["finish_reason"], "length") << thinking;
  EXPECT_EQ(thinking["choices"][0]["message"]["reasoning_content"], message["reasoning_content"]);
  EXPECT_EQ(thinking["choices"][0]["message"]["content"], "");
  // With the block closed in the prompt the schema holds from the first token.
  json schema_closed = schema_open;
  schema_closed["chat_template_kwargs"] = {{"enable_thinking", false}};
  const json answer = chat(server.port(), schema_closed);
  EXPECT_EQ(answer["choices"][0]["finish_reason"], "stop") << answer;
  EXPECT_TRUE(
      json::parse(answer["choices"][0]["message"]["content"].get<std::string>()).is_boolean())
      << answer;

  // enable_thinking false closes the block in the prompt: all content, and the tool grammar
  // applies from the first token.
  const json closed =
      chat(server.port(), chat_body({{"seed", 4},
                                     {"tool_choice", "required"},
                                     {"parallel_tool_calls", false},
                                     {"chat_template_kwargs", {{"enable_thinking", false}}}}));
  const json& m = closed["choices"][0]["message"];
  EXPECT_TRUE(m["reasoning_content"].is_null()) << closed;
  ASSERT_EQ(m["tool_calls"].size(), 1u) << closed;
  expect_valid_call(m["tool_calls"][0]);
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

// Two Hermes calls, as a regex that holds the random model to them.
const std::string kTwoCallsRegex =
    "<tool_call>\\n\\{\"name\": \"now\", \"arguments\": \\{\\}\\}\\n</tool_call>\\n"
    "<tool_call>\\n\\{\"name\": \"get_weather\", \"arguments\": \\{\"city\": \"Oslo\", "
    "\"days\": 2\\}\\}\\n</tool_call>";

TEST_F(ServeToolsHermes, AutoParsesCallsParallelToolCallsFalseKeepsOneAndNoneLeavesThem) {
  ServeProcess server(args(""));
  const json forced = chat_body({{"guided_regex", kTwoCallsRegex}, {"seed", 2}});
  // auto (tools given, no tool_choice): both calls parsed out.
  const json both = chat(server.port(), forced);
  const json& message = both["choices"][0]["message"];
  EXPECT_EQ(both["choices"][0]["finish_reason"], "tool_calls") << both;
  ASSERT_EQ(message["tool_calls"].size(), 2u) << both;
  EXPECT_TRUE(message["content"].is_null()) << both;
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "now");
  EXPECT_EQ(message["tool_calls"][1]["function"]["name"], "get_weather");
  for (const json& call : message["tool_calls"]) expect_valid_call(call);

  // parallel_tool_calls false: the first call only, whole and streamed.
  json single_body = forced;
  single_body["parallel_tool_calls"] = false;
  const json single = chat(server.port(), single_body);
  ASSERT_EQ(single["choices"][0]["message"]["tool_calls"].size(), 1u) << single;
  EXPECT_EQ(single["choices"][0]["message"]["tool_calls"][0]["function"],
            message["tool_calls"][0]["function"]);
  EXPECT_EQ(single["choices"][0]["finish_reason"], "tool_calls");
  const Joined streamed = stream(server.port(), single_body);
  ASSERT_EQ(streamed.calls.size(), 1u);
  EXPECT_EQ(streamed.calls[0]["function"], message["tool_calls"][0]["function"]);
  EXPECT_EQ(streamed.finish_reason, "tool_calls");

  // tool_choice none: the template still shows the tools (as vLLM's does), the output is not
  // parsed for calls.
  json none_body = forced;
  none_body["tool_choice"] = "none";
  const json none = chat(server.port(), none_body);
  const json& plain = none["choices"][0]["message"];
  EXPECT_FALSE(plain.contains("tool_calls")) << none;
  EXPECT_EQ(none["choices"][0]["finish_reason"], "stop");
  const std::string text = plain["content"];
  EXPECT_EQ(text.rfind("<tool_call>\n{\"name\": \"now\"", 0), 0u) << text;
  EXPECT_EQ(none["usage"]["prompt_tokens"], both["usage"]["prompt_tokens"]);
  json no_tools = forced;
  no_tools.erase("tools");
  EXPECT_LT(chat(server.port(), no_tools)["usage"]["prompt_tokens"].get<int>(),
            none["usage"]["prompt_tokens"].get<int>());
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

TEST_F(ServeToolsHermes, OfficialOpenAIClient) {
  const std::string js = DQ4_SOURCE_DIR "/tests/js";
  ASSERT_TRUE(std::filesystem::exists(js + "/node_modules/openai/package.json"))
      << "tests/js/node_modules/openai is missing: run scripts/install-deps.sh";
  std::vector<std::string> a = args("", true);
  a.insert(a.end(), {"--served-model-name", "tiny"});
  ServeProcess server(a);
  const CliResult r = run_node(js + "/openai_tools_test.mjs " + server.url() + " tiny");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("5 checks passed"), std::string::npos) << r.out;
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

TEST_F(ServeToolsHermes, BadToolRequestsAre400sNamingTheField) {
  ServeProcess server(args(""));
  const auto expect_400 = [&](const json& body, const std::string& param) {
    const HttpReply r = post(server.port(), body);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(json::parse(r.body)["error"]["param"], param) << r.body;
  };
  expect_400(chat_body({{"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}}),
             "tool_choice.function.name");
  json bad_schema = chat_body({{"tool_choice", "required"}});
  bad_schema["tools"][1]["function"]["parameters"] = {{"type", "object"},
                                                      {"not", {{"type", "string"}}}};
  expect_400(bad_schema, "tools");
  expect_400(
      chat_body({{"tool_choice", "required"}, {"response_format", {{"type", "json_object"}}}}),
      "tool_choice");
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

TEST_F(ServeToolsHermes, UnknownParsersAreRefusedBeforeTheModelLoads) {
  for (const std::string option : {"--tool-call-parser pythonic", "--reasoning-parser granite"}) {
    const CliResult r = run_dq4("serve " + shell_quote(*model_) + " --port 0 " + option);
    EXPECT_NE(r.exit_code, 0) << option;
    EXPECT_NE(r.err.find("unknown"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("option " + option.substr(0, option.find(' '))), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(option.substr(option.find(' ') + 1)), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace dq4::test
