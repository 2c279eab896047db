// The tool fields of chat requests: what they become, and 400s naming the field at fault.

#include "chat_tools.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api_error.h"
#include "openai_request.h"

namespace dq4::server {
namespace {

using nlohmann::json;

const json kMessages = json::array({{{"role", "user"}, {"content", "Weather?"}}});

json weather_tool() {
  return {{"type", "function"},
          {"function",
           {{"name", "get_weather"},
            {"description", "Weather in a city"},
            {"parameters",
             {{"type", "object"},
              {"properties", {{"city", {{"type", "string"}}}}},
              {"required", {"city"}}}},
            {"strict", true}}}};
}

json body(json extra) {
  json b = {{"messages", kMessages},
            {"tools", {weather_tool(), {{"function", {{"name", "now"}}}}}}};
  if (!extra.is_null()) b.update(extra);
  return b;
}

void expect_error(const json& request, const std::string& param, const std::string& fragment) {
  try {
    parse_chat_request(request.dump());
    ADD_FAILURE() << "expected a 400 naming " << param;
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), param) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(ChatTools, ChoiceAndFunctions) {
  ChatTools t = parse_chat_request(body({}).dump()).tools;
  EXPECT_EQ(t.choice, ChatTools::Choice::automatic);  // tools given, no tool_choice
  ASSERT_EQ(t.functions.size(), 2u);
  EXPECT_EQ(t.functions[0].name, "get_weather");
  EXPECT_EQ(t.functions[0].parameters["required"], json({"city"}));
  // No parameters: a function without any.
  EXPECT_EQ(t.functions[1].parameters["additionalProperties"], false);
  EXPECT_TRUE(t.parallel_tool_calls);

  t = parse_chat_request(body({{"tool_choice", "required"}, {"parallel_tool_calls", false}}).dump())
          .tools;
  EXPECT_EQ(t.choice, ChatTools::Choice::required);
  EXPECT_FALSE(t.parallel_tool_calls);
  t = parse_chat_request(
          body({{"tool_choice", {{"type", "function"}, {"function", {{"name", "now"}}}}}}).dump())
          .tools;
  EXPECT_EQ(t.choice, ChatTools::Choice::named);
  EXPECT_EQ(t.named, "now");
  EXPECT_EQ(parse_chat_request(body({{"tool_choice", "none"}}).dump()).tools.choice,
            ChatTools::Choice::none);
  EXPECT_EQ(parse_chat_request(json{{"messages", kMessages}}.dump()).tools.choice,
            ChatTools::Choice::none);
}

TEST(ChatTools, BadToolsAndChoicesName) {
  expect_error(body({{"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}}),
               "tool_choice.function.name", "not among 'tools'");
  expect_error(body({{"tool_choice", "sometimes"}}), "tool_choice", "must be");
  expect_error(body({{"tool_choice", {{"type", "function"}}}}), "tool_choice", "must be");
  expect_error({{"messages", kMessages}, {"tool_choice", "required"}}, "tool_choice", "tools");
  expect_error(body({{"parallel_tool_calls", "yes"}}), "parallel_tool_calls", "boolean");
  expect_error(body({{"tools", "get_weather"}}), "tools", "array");
  expect_error(body({{"tools", {{{"type", "function"}, {"function", {{"name", "a b"}}}}}}}),
               "tools[0].function.name", "letters");
  expect_error(body({{"tools", {{{"type", "retrieval"}, {"function", {{"name", "a"}}}}}}}),
               "tools[0].type", "function");
  expect_error(body({{"tools", {{{"function", {{"name", "a"}, {"parameters", "{}"}}}}}}}),
               "tools[0].function.parameters", "schema");
  expect_error(body({{"tools", {weather_tool(), weather_tool()}}}), "tools[1].function.name",
               "repeats");
}

TEST(ChatTools, EarlierCallsAndResultsReachTheTemplate) {
  const json messages = {
      {{"role", "user"}, {"content", "Weather?"}},
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls",
        {{{"id", "call_1"},
          {"type", "function"},
          {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}}}}},
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}}};
  const ChatRequest c = parse_chat_request(body({{"messages", messages}}).dump());
  const json context = json::parse(c.template_context);
  const json& call = context["messages"][1]["tool_calls"][0];
  EXPECT_EQ(call["function"]["arguments"], json({{"city", "Paris"}}));  // an object
  EXPECT_EQ(context["messages"][1]["content"], "");
  EXPECT_EQ(context["messages"][2]["tool_call_id"], "call_1");

  json bad = messages;
  bad[1]["tool_calls"][0]["function"]["arguments"] = "{city: Paris}";
  expect_error(body({{"messages", bad}}), "messages[1].tool_calls[0].function.arguments",
               "not valid JSON");
  bad[1]["tool_calls"][0]["function"]["arguments"] = std::string(100, '[');
  expect_error(body({{"messages", bad}}), "messages[1].tool_calls[0].function.arguments", "deeply");
  bad = messages;
  bad[1]["tool_calls"][0]["function"].erase("name");
  expect_error(body({{"messages", bad}}), "messages[1].tool_calls[0].function.name", "string");
  bad = messages;
  bad[2]["tool_call_id"] = 7;
  expect_error(body({{"messages", bad}}), "messages[2].tool_call_id", "string");
}

}  // namespace
}  // namespace dq4::server
