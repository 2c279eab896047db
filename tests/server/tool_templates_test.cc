// OpenAI-shaped tool conversations (arguments as JSON strings, content null beside tool calls,
// tool results) through the chat requests' parser and real chat templates: Qwen3's (the fixture)
// and Meta's Llama 3.2 tool template; and the tool-call format each template teaches.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "../chat_template_samples.h"
#include "../fixtures.h"
#include "dq4/tokenizer/chat_template.h"
#include "openai_request.h"
#include "tool_parsers/tool_call_parser.h"

namespace dq4::server {
namespace {

using nlohmann::json;

std::string conversation() {  // in the key order a client writes
  return nlohmann::ordered_json{
      {"messages",
       {{{"role", "user"}, {"content", "Weather in Paris?"}},
        {{"role", "assistant"},
         {"content", nullptr},
         {"tool_calls",
          {{{"id", "call_1"},
            {"type", "function"},
            {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}}}}},
        {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}}}},
      {"tools",
       {{{"type", "function"},
         {"function",
          {{"name", "get_weather"},
           {"parameters",
            {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}}}}},
      {"chat_template_kwargs", {{"date_string", "26 Jul 2024"}}}}
      .dump();
}

TEST(ToolTemplates, Qwen3RendersCallsAndResults) {
  const ChatTemplate t = ChatTemplate::from_tokenizer_config(test::fixture_path("tokenizer-qwen3"));
  const std::string text = t.render(parse_chat_request(conversation()).template_context, true);
  // The tool as the client wrote it: "type" first, as in Qwen's own examples.
  EXPECT_NE(text.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
                      "\"parameters\": {\"type\": \"object\", \"properties\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", "
                      "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>"),
            std::string::npos)
      << text;
  EXPECT_EQ(detect_tool_format(t.source()), ToolFormat::hermes);
}

TEST(ToolTemplates, Llama32RendersArgumentsAsAnObject) {
  ChatTemplate t = ChatTemplate::from_source(test::kLlama32ToolsTemplate);
  t.special_tokens() = ChatTemplate::read_special_tokens(test::fixture_path("tokenizer-llama3"));
  const std::string text = t.render(parse_chat_request(conversation()).template_context, true);
  // A JSON string here would be quoted again by the template's tojson.
  EXPECT_NE(
      text.find("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|>"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("<|start_header_id|>ipython<|end_header_id|>\n\n\"sunny\"<|eot_id|>"),
            std::string::npos)
      << text;
  EXPECT_EQ(detect_tool_format(t.source()), ToolFormat::llama3_json);
}

TEST(ToolTemplates, TemplatesWithoutToolsShowNoFormat) {
  // The Llama 3 fixture is Llama 3.0's template, without tools; the Mistral v0.1 one neither.
  EXPECT_EQ(
      detect_tool_format(
          ChatTemplate::from_tokenizer_config(test::fixture_path("tokenizer-llama3")).source()),
      ToolFormat::none);
  EXPECT_EQ(detect_tool_format(test::kMistralInstructTemplate), ToolFormat::none);
}

}  // namespace
}  // namespace dq4::server
