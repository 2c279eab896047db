// A chat choice's text as the assistant message: reasoning apart from content, tool calls parsed
// out of the content; the streamed deltas join into the whole message; with parallel_tool_calls
// false only the first call comes out, whole or streamed.

#include "chat_output.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace dq4::server {
namespace {

using nlohmann::json;

const std::string kTwoCalls =
    "<think>which city?</think>\n\nChecking.\n<tool_call>\n{\"name\": \"get_weather\", "
    "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", "
    "\"arguments\": {}}\n</tool_call>";

ChatOutputOptions hermes_with_reasoning(bool single_call) {
  ChatOutputOptions o;
  o.reasoning = true;
  o.think_start = ThinkStart::maybe;
  o.tools = ToolFormat::hermes;
  o.single_call = single_call;
  return o;
}

// The deltas of `text` fed `step` bytes at a time, joined as a client does: reasoning and content
// concatenated, calls by index (the first delta of a call names it).
json joined_stream(const ChatOutputOptions& options, const std::string& text, size_t step) {
  ChatDeltaStream stream(options);
  json message = {{"reasoning_content", ""}, {"content", ""}, {"tool_calls", json::array()}};
  const auto take = [&](const std::vector<json>& deltas) {
    for (const json& d : deltas) {
      for (const char* key : {"reasoning_content", "content"})
        if (d.contains(key))
          message[key] = message[key].get<std::string>() + d[key].get<std::string>();
      for (const json& call : d.value("tool_calls", json::array())) {
        json& calls = message["tool_calls"];
        const size_t index = call["index"];
        if (index == calls.size())
          calls.push_back({{"name", call["function"].at("name")}, {"arguments", ""}});
        ASSERT_LT(index, calls.size()) << call;
        calls[index]["arguments"] = calls[index]["arguments"].get<std::string>() +
                                    call["function"]["arguments"].get<std::string>();
      }
    }
  };
  for (size_t i = 0; i < text.size(); i += step) take(stream.feed(text.substr(i, step)));
  take(stream.finish());
  EXPECT_EQ(stream.called(), !message["tool_calls"].empty());
  return message;
}

json names_and_arguments(const json& tool_calls) {
  json out = json::array();
  for (const json& call : tool_calls)
    out.push_back(
        {{"name", call["function"]["name"]}, {"arguments", call["function"]["arguments"]}});
  return out;
}

TEST(ChatOutput, ReasoningContentAndCallsWholeOrStreamed) {
  bool called = false;
  const json whole = chat_message(hermes_with_reasoning(false), kTwoCalls, called);
  EXPECT_TRUE(called);
  EXPECT_EQ(whole["reasoning_content"], "which city?");
  EXPECT_EQ(whole["content"], "Checking.");
  const json calls = names_and_arguments(whole["tool_calls"]);
  EXPECT_EQ(calls, json::parse(R"([{"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"},
                                   {"name": "now", "arguments": "{}"}])"));
  for (const json& call : whole["tool_calls"]) {
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u) << call;
  }
  EXPECT_NE(whole["tool_calls"][0]["id"], whole["tool_calls"][1]["id"]);
  for (size_t step : {1, 5, 1000}) {
    const json streamed = joined_stream(hermes_with_reasoning(false), kTwoCalls, step);
    EXPECT_EQ(streamed["reasoning_content"], whole["reasoning_content"]) << step;
    EXPECT_EQ(streamed["content"], whole["content"]) << step;
    EXPECT_EQ(streamed["tool_calls"], calls) << step;
  }
}

TEST(ChatOutput, ParallelToolCallsFalseKeepsTheFirstCallOnly) {
  bool called = false;
  const json whole = chat_message(hermes_with_reasoning(true), kTwoCalls, called);
  EXPECT_TRUE(called);
  EXPECT_EQ(whole["content"], "Checking.");
  const json first =
      json::parse(R"([{"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}])");
  EXPECT_EQ(names_and_arguments(whole["tool_calls"]), first);
  for (size_t step : {1, 5, 1000}) {
    const json streamed = joined_stream(hermes_with_reasoning(true), kTwoCalls, step);
    EXPECT_EQ(streamed["content"], "Checking.") << step;
    EXPECT_EQ(streamed["tool_calls"], first) << step;
  }
  // One call is one call either way.
  const std::string one = kTwoCalls.substr(0, kTwoCalls.find("\n<tool_call>\n{\"name\": \"now\""));
  EXPECT_EQ(
      names_and_arguments(chat_message(hermes_with_reasoning(true), one, called)["tool_calls"]),
      first);
}

TEST(ChatOutput, WithoutAToolFormatCallsStayContent) {
  // tool_choice "none": the output is not parsed for calls.
  ChatOutputOptions none;
  bool called = true;
  const json whole = chat_message(none, kTwoCalls, called);
  EXPECT_FALSE(called);
  EXPECT_EQ(whole["content"], kTwoCalls);
  EXPECT_FALSE(whole.contains("tool_calls"));
  EXPECT_FALSE(whole.contains("reasoning_content"));
}

}  // namespace
}  // namespace dq4::server
