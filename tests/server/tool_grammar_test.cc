// The tool-call grammars: in each format, what they accept is what the format's parser reads
// back as calls, and nothing but calls of the allowed functions with valid arguments.

#include "tool_grammar.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "../constrain/gbnf_acceptor.h"
#include "../fixtures.h"
#include "chat_tools.h"
#include "dq4/constrain/constraint.h"
#include "dq4/tokenizer/tokenizer.h"

namespace dq4::server {
namespace {

using nlohmann::json;

ChatTools weather_tools(ChatTools::Choice choice, bool parallel) {
  const json body = {
      {"tools",
       {{{"type", "function"},
         {"function",
          {{"name", "get_weather"},
           {"parameters",
            {{"type", "object"},
             {"properties", {{"city", {{"type", "string"}, {"enum", {"Paris", "Oslo"}}}}}},
             {"required", {"city"}},
             {"additionalProperties", false}}}}}},
        {{"type", "function"}, {"function", {{"name", "now"}}}}}},
      {"parallel_tool_calls", parallel}};
  ChatTools tools = read_chat_tools(body);
  tools.choice = choice;
  if (choice == ChatTools::Choice::named) tools.named = "get_weather";
  return tools;
}

struct Case {
  ToolFormat format;
  std::string one, two;  // one call; two calls
  std::string bad_arguments, other_function;
};

TEST(ToolGrammar, AcceptsCallsTheParserReadsBack) {
  const Case cases[] = {
      {ToolFormat::hermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
       "\"Paris\"}}\n</tool_call>",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"
       "\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
       "\"Rome\"}}\n</tool_call>",
       "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"},
      {ToolFormat::llama3_json,
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}; {\"name\": \"now\", "
       "\"parameters\": {}}",
       "{\"name\": \"get_weather\", \"parameters\": {}}",
       "{\"name\": \"now\", \"parameters\": {}}"},
      {ToolFormat::mistral,
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}, {\"name\": "
       "\"now\", \"arguments\": {}}]",
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": 1}}]",
       "[TOOL_CALLS][{\"name\": \"now\", \"arguments\": {}}]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(tool_format_name(c.format));
    test::GbnfAcceptor parallel(
        tool_call_grammar(c.format, weather_tools(ChatTools::Choice::required, true)));
    test::GbnfAcceptor single(
        tool_call_grammar(c.format, weather_tools(ChatTools::Choice::required, false)));
    test::GbnfAcceptor named(
        tool_call_grammar(c.format, weather_tools(ChatTools::Choice::named, true)));
    EXPECT_TRUE(parallel.accepts(c.one));
    EXPECT_TRUE(parallel.accepts(c.two));
    EXPECT_TRUE(single.accepts(c.one));
    EXPECT_FALSE(single.accepts(c.two));
    EXPECT_TRUE(named.accepts(c.one));
    EXPECT_FALSE(named.accepts(c.two));  // exactly one call, whatever parallel_tool_calls says
    EXPECT_FALSE(named.accepts(c.other_function));
    EXPECT_TRUE(parallel.accepts(c.other_function));
    EXPECT_FALSE(parallel.accepts(c.bad_arguments));
    EXPECT_FALSE(parallel.accepts(""));
    EXPECT_EQ(parse_tool_calls(c.format, c.two).calls.size(), 2u);
  }
}

TEST(ToolGrammar, UnsupportedSchemaKeywordIsNamed) {
  ChatTools tools = weather_tools(ChatTools::Choice::required, true);
  tools.functions[0].parameters = {{"type", "object"}, {"not", {{"type", "string"}}}};
  try {
    tool_call_grammar(ToolFormat::hermes, tools);
    ADD_FAILURE() << "expected a ConstraintError";
  } catch (const constrain::ConstraintError& e) {
    EXPECT_NE(std::string(e.what()).find("not"), std::string::npos) << e.what();
  }
}

// On Qwen3's real vocabulary the grammar lets the model write <tool_call> as the one token it
// was trained to write, not only spelled out in pieces.
TEST(ToolGrammar, Qwen3MayWriteItsToolCallToken) {
  const Tokenizer tokenizer = Tokenizer::from_directory(test::fixture_path("tokenizer-qwen3"));
  const std::optional<TokenId> open = tokenizer.token_to_id("<tool_call>");
  ASSERT_TRUE(open);
  constrain::Compiler compiler(tokenizer, 151936, {*tokenizer.eos_id()});
  constrain::ConstraintSpec spec;
  spec.kind = constrain::ConstraintSpec::Kind::grammar;
  spec.text = tool_call_grammar(ToolFormat::hermes, weather_tools(ChatTools::Choice::named, true));
  const auto matcher = compiler.compile(spec)->matcher();
  std::vector<uint64_t> mask((151936 + 63) / 64);
  matcher->fill_mask(mask);
  EXPECT_TRUE(mask[*open / 64] >> (*open % 64) & 1);
  const std::optional<TokenId> lt = tokenizer.token_to_id("<");
  ASSERT_TRUE(lt);
  EXPECT_TRUE(mask[*lt / 64] >> (*lt % 64) & 1);
  EXPECT_FALSE(mask[*tokenizer.eos_id() / 64] >> (*tokenizer.eos_id() % 64) & 1);
  ASSERT_TRUE(matcher->accept(*open));
  for (TokenId id : tokenizer.encode(
           "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"))
    ASSERT_TRUE(matcher->accept(id)) << id;
  EXPECT_TRUE(matcher->can_end());
}

}  // namespace
}  // namespace dq4::server
