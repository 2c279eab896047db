// The tool-call parsers: whole outputs, the same outputs streamed in pieces (which must come
// out as the whole output's calls and content), malformed calls left as content.

#include "tool_parsers/tool_call_parser.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dq4::server {
namespace {

struct Streamed {
  std::string content;
  std::vector<ToolCall> calls;
  std::vector<std::string> ids;
};

// Feeds `text` `step` bytes at a time; checks each call's first delta carries its id and name.
Streamed stream(ToolFormat format, const std::string& text, size_t step) {
  int next = 0;
  ToolCallStream parser(format, [&] { return "call_" + std::to_string(next++); });
  Streamed out;
  const auto take = [&](const ToolCallStream::Delta& d) {
    out.content += d.content;
    for (const auto& c : d.calls) {
      if (c.index == out.calls.size()) {
        EXPECT_FALSE(c.id.empty());
        EXPECT_FALSE(c.name.empty());
        out.calls.push_back({c.id, c.name, ""});
      } else {
        ASSERT_LT(c.index, out.calls.size());
        EXPECT_TRUE(c.id.empty() && c.name.empty());
      }
      out.calls[c.index].arguments += c.arguments;
    }
  };
  for (size_t i = 0; i < text.size(); i += step) take(parser.feed(text.substr(i, step)));
  take(parser.finish());
  return out;
}

// The whole output parses to `content` and `calls` ({name, arguments}), and so does every way of
// streaming it.
void expect_parse(ToolFormat format, const std::string& text, std::optional<std::string> content,
                  const std::vector<std::pair<std::string, std::string>>& calls) {
  SCOPED_TRACE(text);
  const ParsedToolOutput parsed = parse_tool_calls(format, text);
  EXPECT_EQ(parsed.content, content);
  ASSERT_EQ(parsed.calls.size(), calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(parsed.calls[i].name, calls[i].first);
    EXPECT_EQ(parsed.calls[i].arguments, calls[i].second);
  }
  for (size_t step : {1, 2, 3, 7, 1000}) {
    SCOPED_TRACE("step " + std::to_string(step));
    const Streamed s = stream(format, text, step);
    EXPECT_EQ(s.content, content.value_or(""));
    ASSERT_EQ(s.calls.size(), calls.size());
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(s.calls[i].name, calls[i].first);
      EXPECT_EQ(s.calls[i].arguments, calls[i].second);
    }
  }
}

TEST(ToolCallParser, Hermes) {
  const ToolFormat f = ToolFormat::hermes;
  expect_parse(f,
               "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
               "\"Paris\"}}\n</tool_call>",
               std::nullopt, {{"get_weather", "{\"city\": \"Paris\"}"}});
  // Text before the calls, two calls, arguments before the name, nested values, the last
  // closing tag left out.
  expect_parse(
      f,
      "Let me check.\n\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, 2.5e3, "
      "{\"y\": null}], \"s\": \"<tool_call> \\\"q\\\" \\u00e9\"}}\n</tool_call>\n"
      "<tool_call>\n{\"arguments\": {}, \"name\": \"b\"}",
      "Let me check.",
      {{"a", "{\"x\": [1, 2.5e3, {\"y\": null}], \"s\": \"<tool_call> \\\"q\\\" \\u00e9\"}"},
       {"b", "{}"}});
  // Text after the calls is content too.
  expect_parse(f, "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>\nDone.", "Done.",
               {{"a", "{}"}});
  // No call: all content, whitespace and a lone '<' included.
  expect_parse(f, "Plain answer with a < sign \n", "Plain answer with a < sign \n", {});
  expect_parse(f, "almost <tool_cal", "almost <tool_cal", {});
}

// Whole outputs only: a call found malformed after its start was streamed stays a call there.
void expect_content(ToolFormat format, const std::string& text) {
  SCOPED_TRACE(text);
  const ParsedToolOutput parsed = parse_tool_calls(format, text);
  EXPECT_EQ(parsed.content, text);
  EXPECT_TRUE(parsed.calls.empty());
}

TEST(ToolCallParser, MalformedStaysContent) {
  const ToolFormat f = ToolFormat::hermes;
  expect_content(ToolFormat::llama3_json, "{\"name\": \"a\", \"parameters\": {}} and more");
  expect_content(ToolFormat::llama3_json, "{\"name\": \"a\", \"parameters\": {}};");
  expect_content(ToolFormat::mistral, "[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {}}");
  expect_content(ToolFormat::mistral, "[TOOL_CALLS]a[ARGS]");
  for (const char* text :
       {"<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": }}\n</tool_call>",  // bad JSON
        "<tool_call>\n{\"arguments\": {}}\n</tool_call>",                          // no name
        "<tool_call>\n{\"name\": \"a\"}\n</tool_call>",                            // no arguments
        "<tool_call>\n{\"name\": \"a\", \"arguments\": [1]}\n</tool_call>",        // not an object
        "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}",                // cut short
        "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_cell>"})
    expect_content(f, text);
  // Streamed, a call that breaks before its name is known is content all along.
  const std::string text = "Hi <tool_call>\n{\"arguments\": {}, \"oops\": }";
  const Streamed s = stream(f, text, 1);
  EXPECT_EQ(s.content, text);
  EXPECT_TRUE(s.calls.empty());
}

TEST(ToolCallParser, Llama3Json) {
  const ToolFormat f = ToolFormat::llama3_json;
  expect_parse(f, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
               std::nullopt, {{"get_weather", "{\"city\": \"Paris\"}"}});
  expect_parse(f,
               "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"n\": 1}}; {\"name\": \"b\", "
               "\"arguments\": {}}",
               std::nullopt, {{"a", "{\"n\": 1}"}, {"b", "{}"}});
  expect_parse(f, "The weather is fine.", "The weather is fine.", {});
  // JSON that is not a call is the answer, as written.
  expect_parse(f, "{\"city\": \"Paris\"}", "{\"city\": \"Paris\"}", {});
}

TEST(ToolCallParser, Mistral) {
  const ToolFormat f = ToolFormat::mistral;
  expect_parse(f,
               "[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"q\": \"x\"}}, {\"name\": \"b\", "
               "\"arguments\": {}}]",
               std::nullopt, {{"a", "{\"q\": \"x\"}"}, {"b", "{}"}});
  expect_parse(f, "Sure. [TOOL_CALLS]a[ARGS]{\"q\": [1]}[TOOL_CALLS]b_2[ARGS]{}", "Sure.",
               {{"a", "{\"q\": [1]}"}, {"b_2", "{}"}});
  expect_parse(f, "[TOOL_CALLS]a b[ARGS]{}", "[TOOL_CALLS]a b[ARGS]{}", {});
}

TEST(ToolCallParser, StreamsArgumentsInFragmentsAndHoldsBackOnlyWhatMayBeACall) {
  int ids = 0;
  ToolCallStream parser(ToolFormat::hermes, [&] { return "id" + std::to_string(ids++); });
  EXPECT_EQ(parser.feed("Hello <").content, "Hello");
  EXPECT_EQ(parser.feed("b> x").content, " <b> x");
  EXPECT_TRUE(parser.feed("\n<tool_call>\n{\"name\": \"f").empty());
  auto d = parser.feed("\", \"argu");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].id, "id0");
  EXPECT_EQ(d.calls[0].name, "f");
  EXPECT_EQ(d.calls[0].arguments, "");
  d = parser.feed("ments\": {\"a\": 1");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_TRUE(d.calls[0].id.empty());
  EXPECT_EQ(d.calls[0].arguments, "{\"a\": 1");
  d = parser.feed("2}}\n</tool_call>");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_TRUE(d.calls[0].id.empty());
  EXPECT_EQ(d.calls[0].arguments, "2}");
  EXPECT_TRUE(parser.finish().empty());
  EXPECT_TRUE(parser.has_calls());
}

TEST(ToolCallParser, FormatFromTemplateAndName) {
  EXPECT_EQ(detect_tool_format("{{- '<tool_call>\\n' }}"), ToolFormat::hermes);
  EXPECT_EQ(detect_tool_format("{{ '[TOOL_CALLS]' + tool_calls|tojson }}"), ToolFormat::mistral);
  EXPECT_EQ(detect_tool_format("Environment: ipython"), ToolFormat::llama3_json);
  EXPECT_EQ(detect_tool_format("{{ message.content }}"), ToolFormat::none);
  EXPECT_EQ(tool_format_from_name("llama3_json"), ToolFormat::llama3_json);
  EXPECT_EQ(tool_format_from_name("pythonic"), std::nullopt);
}

}  // namespace
}  // namespace dq4::server
