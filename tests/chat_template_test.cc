// Chat templates: the Jinja2 subset (expressions, filters, tests, methods, whitespace control),
// the real templates of the fixtures and well-known models against Python Jinja2's output (what
// transformers renders), model-directory loading, and hostile or malformed templates.

#include "dq4/tokenizer/chat_template.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "chat_template_samples.h"
#include "expect_error.h"
#include "fixtures.h"

namespace dq4::test {
namespace {

constexpr const char* kNoMessages = R"({"messages": []})";

std::string render(const std::string& source, const std::string& context = kNoMessages,
                   bool add_generation_prompt = false) {
  return ChatTemplate::from_source(source).render(context, add_generation_prompt);
}

struct Case {
  const char* source;
  const char* expected;
};

void expect_renders(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    try {
      EXPECT_EQ(
          render(c.source, R"({"messages": [], "d": {"a": 1, "b": [1, 2]}, "s": "h\u00e9llo"})"),
          c.expected)
          << c.source;
    } catch (const Error& e) {
      ADD_FAILURE() << c.source << ": " << e.what();
    }
  }
}

// Expected values are Python Jinja2 3.1's (with transformers' tojson).
TEST(ChatTemplateJinja, PrintsValuesAsPython) {
  expect_renders({
      {"{{ none }}|{{ true }}|{{ false }}|{{ 1.0 }}|{{ 7 }}|{{ -2.5 }}",
       "None|True|False|1.0|7|-2.5"},
      {"{{ [1, 'a', none, true, 1.5] }}|{{ {'a': 1} }}|{{ (1, 2) }}|{{ (1,) }}|{{ () }}",
       "[1, 'a', None, True, 1.5]|{'a': 1}|(1, 2)|(1,)|()"},
      {"{{ 1e20 }}|{{ 1e16 }}|{{ 1e15 }}|{{ 0.0001 }}|{{ 0.00001 }}|{{ 1_000 }}",
       "1e+20|1e+16|1000000000000000.0|0.0001|1e-05|1000"},
      {"{{ \"it's\" }}|{{ [\"it's\", 'a\\nb'] }}", "it's|[\"it's\", 'a\\nb']"},
      {"{{ undefined_name }}|{{ d.missing }}|{{ d['missing'] }}|{{ [1][5] }}", "|||"},
  });
}

TEST(ChatTemplateJinja, EvaluatesOperatorsAsPython) {
  expect_renders({
      {"{{ 'a' * 3 }}|{{ [1] * 2 }}|{{ 10 / 4 }}|{{ 3 - 1.5 }}|{{ 2 ** -1 }}|{{ 2 ** 10 }}",
       "aaa|[1, 1]|2.5|1.5|0.5|1024"},
      {"{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 / 2 }}|{{ -7 % 3 }}|{{ 4 / 2 }}|{{ -2 ** 2 }}",
       "3|-4|3.5|2|2.0|4"},
      {"{{ [1, 2] ~ 'x' }}|{{ none ~ 'x' }}|{{ 1 ~ 2 }}|{{ 'a' 'b' }}", "[1, 2]x|Nonex|12|ab"},
      {"{{ 1 == 1.0 }}|{{ true == 1 }}|{{ [1, 2] == [1, 2] }}|{{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}",
       "True|True|True|True|False"},
      {"{{ 'a' in ['a'] }}|{{ 'a' in {'a': 1} }}|{{ 'a' not in 'bcd' }}|{{ not 1 == 2 }}",
       "True|True|True|True"},
      {"{{ 0 or 'x' }}|{{ 1 and 'y' }}|{{ [] or none }}|{{ x if false }}|{{ 1 if true else 2 }}",
       "x|y|None||1"},
      {"{{ \"%s-%d %r %%\" % ('a', 3, 'q') }}|{{ 'v%s' % 1 }}", "a-3 'q' %|v1"},
  });
}

TEST(ChatTemplateJinja, IndexesAndSlicesByCodePoint) {
  expect_renders({
      {"{{ 'abc'[1:] }}|{{ 'abc'[::-1] }}|{{ [1, 2, 3][-1] }}|{{ [1, 2, 3][::2] }}|{{ 'abc'[-5:2] "
       "}}",
       "bc|cba|3|[1, 3]|ab"},
      {"{{ s[1] }}|{{ s[-3:] }}|{{ s|length }}|{{ s|reverse }}|{{ d.b[1] }}|{{ d['a'] }}|{{ d.b.0 "
       "}}",
       "\xc3\xa9|llo|5|oll\xc3\xa9h|2|1|1"},
  });
}

TEST(ChatTemplateJinja, StringMethods) {
  expect_renders({
      {"{{ 'a b  c'.split() }}|{{ 'a,b,,c'.split(',') }}|{{ 'a,b,c'.split(',', 1) }}",
       "['a', 'b', 'c']|['a', 'b', '', 'c']|['a', 'b,c']"},
      {"{{ 'a,b,c'.rsplit(',', 1) }}|{{ ' a b '.rsplit(none, 1) }}", "['a,b', 'c']|[' a', 'b']"},
      {"{{ '  x '.lstrip() }}|{{ 'xyx'.strip('x') }}|{{ '\\n\\nx\\n'.lstrip('\\n') }}|{{ ' x "
       "'.rstrip() }}",
       "x |y|x\n| x"},
      {"{{ 'abc'.startswith(('x', 'a')) }}|{{ 'abc'.endswith('bc') }}|{{ 'x'.upper() }}|{{ "
       "'AbC'.lower() }}",
       "True|True|X|abc"},
      {"{{ 'hello {} {}'.format(1, 'x') }}|{{ '{0}{name}{{}}'.format(1, name='x') }}",
       "hello 1 x|1x{}"},
      {"{{ 'hi there'.title() }}|{{ 'hELLO'.capitalize() }}|{{ 'aXa'.replace('a', 'b') }}|{{ "
       "'-'.join(['a', 'b']) }}",
       "Hi There|Hello|bXb|a-b"},
      {"{{ 'abcb'.find('b') }}|{{ 'abcb'.rfind('b') }}|{{ 'abcb'.count('b') }}|{{ '12'.isdigit() "
       "}}|{{ 'a\\nb'.splitlines() }}",
       "1|3|2|True|['a', 'b']"},
  });
}

TEST(ChatTemplateJinja, DictMethodsAndLoops) {
  expect_renders({
      {"{{ d.get('zz', 5) }}|{{ d.get('a') }}|{{ d.get('zz') }}|{{ d.keys()|list }}|{{ "
       "d.items()|list }}",
       "5|1|None|['a', 'b']|[('a', 1), ('b', [1, 2])]"},
      {"{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"
       "{% for c in 'ab' %}{{ c }}{% endfor %}{% for k in {'x': 1} %}{{ k }}{% endfor %}",
       "a=1;b=2;abx"},
      {"{% for a in [1, 2, 3] if a > 1 %}{{ loop.index }}{{ a }}{{ loop.first }}{{ loop.last }}"
       "{{ loop.length }}{% else %}none{% endfor %}",
       "12TrueFalse223FalseTrue2"},
      {"{% for a in [] %}x{% else %}empty{% endfor %}|{% for a in [1, 2] %}{{ loop.revindex }}"
       "{{ loop.cycle('a', 'b') }}{{ loop.previtem }}{% endfor %}",
       "empty|2a1b1"},
      {"{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 3 %}{% break %}"
       "{% endif %}{{ i }}{% endfor %}",
       "02"},
      // A loop body's assignments last one iteration; namespaces carry state out.
      {"{% set x = 0 %}{% for i in range(3) %}{{ x }}{% set x = i %}{{ x }}{% endfor %}{{ x }}",
       "0001020"},
      {"{% set ns = namespace(n=0) %}{% for i in range(3) %}{% set ns.n = ns.n + i %}{% endfor "
       "%}{{ ns.n }}",
       "3"},
      {"{% set a, b = [1, 2] %}{{ b }}{{ a }}|{{ range(1, 10, 3)|list }}|{{ dict(a=1) }}",
       "21|[1, 4, 7]|{'a': 1}"},
  });
}

TEST(ChatTemplateJinja, Filters) {
  expect_renders({
      {"{{ '  x  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ 'a\\u00a0'|trim|length }}|{{ 'abc'|first "
       "}}|{{ []|first }}|{{ 'ab'|list }}",
       "x|a|1|a||['a', 'b']"},
      {"{{ [3, 1, 2]|sort|join(',') }}|{{ ['b', 'A', 'a']|sort|list }}|{{ [1, 2, 3]|sum }}|{{ [1, "
       "2]|map('string')|join }}",
       "1,2,3|['A', 'a', 'b']|6|12"},
      {"{{ [1, 2, 3]|select('odd')|list }}|{{ [{'a': 1}, {'b': 2}]|selectattr('a')|list }}|{{ "
       "[{'a': 1}, {'a': 2}]|map(attribute='a')|list }}",
       "[1, 3]|[{'a': 1}]|[1, 2]"},
      {"{{ [{'a': 1}, {'a': none}]|selectattr('a', 'none')|list }}|{{ [{'a': 1}, {'a': "
       "2}]|rejectattr('a', 'equalto', 1)|list }}|{{ [1, 2, 3]|reject('odd')|list }}",
       "[{'a': None}]|[{'a': 2}]|[2]"},
      {"{{ 'Hello World-foo bar'|title }}|{{ 'hello WORLD'|capitalize }}|{{ "
       "'a\\nb\\n\\nc'|indent(2) }}|{{ 'x'|indent(2, true) }}",
       "Hello World-Foo Bar|Hello world|a\n  b\n\n  c|  x"},
      {"{{ 'x'|int }}|{{ '12'|int }}|{{ ' 12 '|int }}|{{ '1.7'|int }}|{{ 1.7|int }}|{{ "
       "'0x1A'|int(0, 16) }}|{{ '3.5'|float }}|{{ 3|float }}|{{ true|int }}",
       "0|12|12|1|1|26|3.5|3.0|1"},
      {"{{ [1, 2, 3]|last }}|{{ [1, 2, 3]|length }}|{{ {'a': 1}|length }}|{{ [3, 1]|max }}|{{ [3, "
       "1]|min }}|{{ [1, 1, 2]|unique|list }}|{{ [1, 2]|reverse|list }}",
       "3|3|1|3|1|[1, 2]|[2, 1]"},
      {"{{ 1.5|round }}|{{ 2.5|round }}|{{ 2.567|round(2) }}|{{ -3|abs }}|{{ x|default('d') }}|{{ "
       "''|default('d', true) }}|{{ 5|string }}",
       "2.0|2.0|2.57|3|d|d|5"},
      {"{{ {'b': 1, 'a': 2}|dictsort }}|{{ {'a': 1}|items|list }}|{{ '<a&b>'|e }}|{{ 'ab'|upper "
       "}}|{{ 'AB'|lower }}|{{ 'aXa'|replace('a', 'b', 1) }}",
       "[('a', 2), ('b', 1)]|[('a', 1)]|&lt;a&amp;b&gt;|AB|ab|bXa"},
  });
}

TEST(ChatTemplateJinja, ToJsonAsTransformersWritesIt) {
  expect_renders({
      {"{{ [1, 'a', none, true, 2.5]|tojson }}|{{ 'caf\\u00e9 \"q\"\\n'|tojson }}|{{ 1.0|tojson }}",
       "[1, \"a\", null, true, 2.5]|\"caf\xc3\xa9 \\\"q\\\"\\n\"|1.0"},
      {"{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}|{{ [1, 2]|tojson(separators=(',', ':')) "
       "}}|{{ '\\u00e9'|tojson(ensure_ascii=true) }}",
       "{\"a\": 2, \"b\": 1}|[1,2]|\"\\u00e9\""},
      {"{{ d|tojson(indent=2) }}|{{ {'e': {}, 'l': []}|tojson(indent=2) }}",
       "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n}|{\n  \"e\": {},\n  \"l\": []\n}"},
  });
}

TEST(ChatTemplateJinja, Tests) {
  expect_renders({
      {"{{ 'abc' is string }}|{{ {} is mapping }}|{{ 'a' is iterable }}|{{ {} is sequence }}|{{ "
       "none is none }}|{{ 1 is sameas 1 }}",
       "True|True|True|True|True|True"},
      {"{{ 1 is eq 1 }}|{{ 4 is divisibleby 2 }}|{{ 'a' is in 'abc' }}|{{ 3 is odd }}|{{ true is "
       "number }}|{{ true is integer }}",
       "True|True|True|True|True|False"},
      {"{{ x is defined }}|{{ x is undefined }}|{{ d is not none }}|{{ false is false }}|{{ 1 is "
       "true }}|{{ 2 is equalto 2 }}",
       "False|True|True|True|False|True"},
  });
}

TEST(ChatTemplateJinja, MacrosAndBlocks) {
  expect_renders({
      {"{% macro f(a, b=2) %}{{ a }}{{ b }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1) }}|{{ "
       "f(1, 3) }}|{{ f(1, b=5) }}|{{ f(1, 2, 3) }}",
       "12(){}|13(){}|15(){}|12(3,){}"},
      {"{% set x %}  hi {{ 1 }}{% endset %}[{{ x }}]|{% filter upper %}abc{% endfilter %}|{% set y "
       "| trim %} z {% endset %}{{ y }}",
       "[  hi 1]|ABC|z"},
      {"{% raw %}{{ raw }}{% endraw %}|{% generation %}g{% endgeneration %}", "{{ raw }}|g"},
  });
}

// transformers renders with trim_blocks and lstrip_blocks; `-` and `+` modifiers on top.
TEST(ChatTemplateJinja, WhitespaceControl) {
  const std::string source =
      "  {% if true %}\n    x\n  {% endif %}\n  {{ 'y' }}\n  {%- if true -%}\n   z\n  {% endif %}\n"
      "  {%+ if true %}w{% endif %}\n  {# comment #}\n  a {# c2 -#}\n   b\n"
      "{% raw %}{{ raw }}{% endraw %}\n  {%- raw -%}  {% x %}  {%- endraw %} c\n";
  EXPECT_EQ(render(source), "    x\n  yz\n  w  a b\n{{ raw }}{% x %} c");
  EXPECT_EQ(render("{%- for x in [1, 2] -%}\n    {{ x }}\n{%- endfor %}\ntail\n"), "12tail");
  EXPECT_EQ(render("a\r\nb\rc\n\n"), "a\nb\nc\n");  // newlines normalized, one trailing dropped
}

TEST(ChatTemplateJinja, UndefinedFailsWhenUsedFurther) {
  expect_error([] { render("{{ x.y }}"); }, {"line 1, column 5", "'x' is undefined"});
  expect_error([] { render("\n\n  {{ d.a.b.c }}", R"({"messages": [], "d": {"a": {}}})"); },
               {"line 3", "'dict object' has no attribute 'b'"});
  expect_error([] { render("{{ 1 + x }}"); }, "'x' is undefined");
  expect_error([] { render("{{ 'a' + 1 }}"); },
               "unsupported operand type(s) for +: 'str' and 'int'");
  expect_error([] { render("{{ 5 // 0 }}"); }, "integer division or modulo by zero");
  expect_error([] { render("{% for x in none %}{% endfor %}"); },
               "'NoneType' object is not iterable");
  expect_error([] { render("{{ none.x.y }}"); }, "has no attribute 'x'");
}

TEST(ChatTemplateJinja, RaiseExceptionCarriesTheTemplatesMessage) {
  expect_error([] { render("line one\n{{ raise_exception('Roles must alternate!') }}"); },
               {"raised an error (line 2", "Roles must alternate!"});
}

TEST(ChatTemplateJinja, StrftimeNowFormatsTheCurrentDate) {
  const std::string year = render("{{ strftime_now('%Y') }}");
  EXPECT_EQ(year.size(), 4u);
  EXPECT_GE(std::stoi(year), 2024);
}

// Each must be a dq4::Error naming a position, never a crash or a silent render.
TEST(ChatTemplateJinja, MalformedTemplatesAreClearErrors) {
  const std::vector<std::pair<const char*, const char*>> broken = {
      {"{% if x %}never closed", "'if' is never closed"},
      {"{% for x in y %}", "'for' is never closed"},
      {"{{ x ", "never closed with '}}'"},
      {"{% if x ", "never closed with '%}'"},
      {"{# comment", "comment '{#' is never closed"},
      {"{{ 'unterminated }}", "string literal is never closed"},
      {"{% endif %}", "unexpected '{% endif %}'"},
      {"{% else %}", "unexpected '{% else %}'"},
      {"{% if x %}{% endfor %}", "expected"},
      {"{% include 'x.jinja' %}", "'{% include %}' is not supported"},
      {"{% extends 'base' %}", "'{% extends %}' is not supported"},
      {"{% call foo() %}{% endcall %}", "'{% call %}' is not supported"},
      {"{% frobnicate %}", "unknown tag 'frobnicate'"},
      {"{{ x | nosuchfilter }}", "unknown filter 'nosuchfilter'"},
      {"{{ x is nosuchtest }}", "unknown test 'nosuchtest'"},
      {"{{ }}", "expected an expression"},
      {"{{ 1 + }}", "expected an expression"},
      {"{{ (1, 2 }}", "expected ')'"},
      {"{{ [1, 2 }}", "expected ']'"},
      {"{{ {'a' 1} }}", "expected ':'"},
      {"{{ a.. }}", "expected an attribute name"},
      {"{{ a[] }}", "empty subscript"},
      {"{{ f(*args) }}", "'*args' / '**kwargs' in calls are not supported"},
      {"{{ f(a=1, 2) }}", "positional argument after a keyword argument"},
      {"{{ 1 @ 2 }}", "unexpected character '@'"},
      {"{{ 99999999999999999999 }}", "too large"},
      {"{{ '\\x4' }}", "escape"},
      {"{% set %}", "expected a variable name"},
      {"{% set x = %}", "expected an expression"},
      {"{% for in y %}{% endfor %}", "expected 'in'"},
      {"{% for x y %}{% endfor %}", "expected 'in'"},
      {"{% for x in y recursive %}{% endfor %}", "recursive loops are not supported"},
      {"{% break %}", "'break' outside of a for loop"},
      {"{% macro %}{% endmacro %}", "expected a macro name"},
      {"{% macro m(a %}{% endmacro %}", "expected ')'"},
      {"{% raw %}no end", "never closed with '{% endraw %}'"},
      {"{{ x is not }}", "expected a test name"},
      {"{{ 1 if }}", "expected an expression"},
  };
  for (const auto& [source, fragment] : broken) {
    SCOPED_TRACE(source);
    expect_error([&] { ChatTemplate::from_source(source); }, {"line 1, column", fragment});
  }
  expect_error([] { ChatTemplate::from_source("ok\n\n  {{ x | bogus }}"); },
               {"line 3, column", "unknown filter 'bogus'"});
  expect_error([] { ChatTemplate::from_source(std::string("\xff\xfe")); }, "not valid UTF-8");
}

// Hostile templates fail cleanly and quickly instead of exhausting the stack, memory or time.
TEST(ChatTemplateJinja, HostileTemplatesHitLimits) {
  expect_error(
      [] {
        ChatTemplate::from_source("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') +
                                  " }}");
      },
      "levels deep");
  expect_error(
      [] {
        ChatTemplate::from_source("{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}");
      },
      "levels deep");
  std::string chain = "{{ 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  expect_error([&] { ChatTemplate::from_source(chain + " }}"); }, "levels deep");
  std::string nested_ifs;
  for (int i = 0; i < 500; ++i) nested_ifs += "{% if true %}";
  expect_error([&] { ChatTemplate::from_source(nested_ifs); }, "levels deep");
  expect_error([] { render("{% for i in range(1000000000) %}x{% endfor %}"); }, "steps");
  expect_error(
      [] {
        render("{% for i in range(2000) %}{% for j in range(2000) %}{% endfor %}{% endfor %}");
      },
      "steps");
  expect_error([] { render("{{ 'x' * 1000000000 }}"); }, "longer than");
  expect_error(
      [] {
        render(
            "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s "
            "%}{% endfor %}");
      },
      "longer than");
  expect_error(
      [] {
        render(
            "{% set ns = namespace(l=[1]) %}{% for i in range(60) %}{% set ns.l = ns.l + ns.l %}{% "
            "endfor %}");
      },
      "steps");
  expect_error(
      [] {
        render(
            "{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}{% "
            "endfor %}");
      },
      "nested more than");
  expect_error([] { render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"); },
               "recursion");
  expect_error([] { render("{{ 2 ** 64 }}"); }, "integer overflow");
  expect_error([] { render("{{ '%d' % ('nan' | float) }}"); }, "no 64-bit integer value");
  expect_error([] { render("{{ '%d' % ('1e300' | float) }}"); }, "no 64-bit integer value");
  EXPECT_EQ(render("{{ '%d' % -2.75 }}"), "-2");
  // A namespace holding itself renders and is freed (ASan's leak check watches this).
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.me = ns %}{% set ns.l = [ns] %}ok"), "ok");
}

struct RealCase {
  const char* name;
  ChatTemplate (*load)();
  const char* context;
  bool add_generation_prompt;
  const char* expected;
};

ChatTemplate load_fixture(const std::string& dir) {
  return ChatTemplate::from_tokenizer_config(fixtures_dir() + "/" + dir);
}

ChatTemplate load_source(const char* source, const std::string& tokens_dir) {
  ChatTemplate t = ChatTemplate::from_source(source);
  if (!tokens_dir.empty())
    t.special_tokens() = ChatTemplate::read_special_tokens(fixtures_dir() + "/" + tokens_dir);
  return t;
}

#define Fixture(dir) [] { return load_fixture(dir); }
#define Source(source, dir) [] { return load_source(source, dir); }

// Expected texts: transformers' renderer (Python Jinja2 3.1, trim_blocks, lstrip_blocks).
TEST(ChatTemplateModels, RenderAsTransformersDoes) {
  const std::vector<RealCase> cases = {
      {"llama3_multi_turn", Fixture("tokenizer-llama3"),
       R"J({"messages": [{"role": "system", "content": "  Be brief. "}, {"role": "user", "content": "Hi\n"}, {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "caf\u00e9 \ud83d\ude42"}]})J",
       true,
       "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n"
       "\n"
       "Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
       "\n"
       "Hi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
       "\n"
       "Hello!<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
       "\n"
       "caf\xc3\xa9"
       " \xf0\x9f\x99\x82"
       "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
       "\n"},
      {"qwen3_reasoning", Fixture("tokenizer-qwen3"),
       R"J({"messages": [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4"}, {"role": "user", "content": "and 3+3?"}, {"role": "assistant", "content": "6", "reasoning_content": "easy"}]})J",
       false,
       "<|im_start|>system\n"
       "You are helpful.<|im_end|>\n"
       "<|im_start|>user\n"
       "2+2?<|im_end|>\n"
       "<|im_start|>assistant\n"
       "4<|im_end|>\n"
       "<|im_start|>user\n"
       "and 3+3?<|im_end|>\n"
       "<|im_start|>assistant\n"
       "<think>\n"
       "easy\n"
       "</think>\n"
       "\n"
       "6<|im_end|>\n"},
      {"qwen3_tools", Fixture("tokenizer-qwen3"),
       R"J({"messages": [{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}, {"name": "search", "arguments": "{\"q\": \"Paris\"}"}]}, {"role": "tool", "content": "sunny"}, {"role": "tool", "content": "{\"hits\": 3}"}], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]})J",
       true,
       "<|im_start|>system\n"
       "# Tools\n"
       "\n"
       "You may call one or more functions to assist with the user query.\n"
       "\n"
       "You are provided with function signatures within <tools></tools> XML tags:\n"
       "<tools>\n"
       "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": "
       "\"Weather\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": "
       "\"string\"}}}}}\n"
       "</tools>\n"
       "\n"
       "For each function call, return a json object with function name and arguments within "
       "<tool_call></tool_call> XML tags:\n"
       "<tool_call>\n"
       "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
       "</tool_call><|im_end|>\n"
       "<|im_start|>user\n"
       "Weather in Paris?<|im_end|>\n"
       "<|im_start|>assistant\n"
       "<tool_call>\n"
       "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n"
       "</tool_call>\n"
       "<tool_call>\n"
       "{\"name\": \"search\", \"arguments\": {\"q\": \"Paris\"}}\n"
       "</tool_call><|im_end|>\n"
       "<|im_start|>user\n"
       "<tool_response>\n"
       "sunny\n"
       "</tool_response>\n"
       "<tool_response>\n"
       "{\"hits\": 3}\n"
       "</tool_response><|im_end|>\n"
       "<|im_start|>assistant\n"},
      {"qwen3_no_thinking", Fixture("tokenizer-qwen3"),
       R"J({"messages": [{"role": "user", "content": "Hi"}], "enable_thinking": false})J", true,
       "<|im_start|>user\n"
       "Hi<|im_end|>\n"
       "<|im_start|>assistant\n"
       "<think>\n"
       "\n"
       "</think>\n"
       "\n"},
      {"mistral", Source(kMistralInstructTemplate, "tokenizer-mistral"),
       R"J({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}]})J",
       false, "<s>[INST] Hi [/INST]Hello</s>[INST] Bye [/INST]"},
      {"chatml", Source(kChatMlTemplate, ""),
       R"J({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": ""}, {"role": "assistant", "content": "{{ not jinja }}"}]})J",
       true,
       "<|im_start|>system\n"
       "S<|im_end|>\n"
       "<|im_start|>user\n"
       "<|im_end|>\n"
       "<|im_start|>assistant\n"
       "{{ not jinja }}<|im_end|>\n"
       "<|im_start|>assistant\n"},
      {"llama32_tools", Source(kLlama32ToolsTemplate, "tokenizer-llama3"),
       R"J({"messages": [{"role": "system", "content": "Sys"}, {"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}, {"role": "tool", "content": "sunny"}], "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}], "date_string": "26 Jul 2024"})J",
       true,
       "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n"
       "\n"
       "Environment: ipython\n"
       "Cutting Knowledge Date: December 2023\n"
       "Today Date: 26 Jul 2024\n"
       "\n"
       "Sys<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
       "\n"
       "Given the following functions, please respond with a JSON for a function call with its "
       "proper arguments that best answers the given prompt.\n"
       "\n"
       "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument "
       "name and its value}.Do not use variables.\n"
       "\n"
       "{\n"
       "    \"type\": \"function\",\n"
       "    \"function\": {\n"
       "        \"name\": \"get_weather\",\n"
       "        \"parameters\": {\n"
       "            \"type\": \"object\",\n"
       "            \"properties\": {\n"
       "                \"city\": {\n"
       "                    \"type\": \"string\"\n"
       "                }\n"
       "            },\n"
       "            \"required\": [\n"
       "                \"city\"\n"
       "            ]\n"
       "        }\n"
       "    }\n"
       "}\n"
       "\n"
       "Weather?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
       "\n"
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": "
       "\"Paris\"}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n"
       "\n"
       "\"sunny\"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
       "\n"},
  };
  for (const RealCase& c : cases) {
    SCOPED_TRACE(c.name);
    try {
      EXPECT_EQ(c.load().render(c.context, c.add_generation_prompt), c.expected);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

#undef Fixture
#undef Source

TEST(ChatTemplateModels, MistralInstructRejectsRolesOutOfTurn) {
  const ChatTemplate t = load_source(kMistralInstructTemplate, "tokenizer-mistral");
  expect_error([&] { t.render(R"([{"role": "assistant", "content": "x"}])", false); },
               "Conversation roles must alternate user/assistant/user/assistant/...");
  expect_error(
      [&] {
        t.render(R"([{"role": "user", "content": "x"}, {"role": "system", "content": "s"}])",
                 false);
      },
      "Only user and assistant roles are supported!");
}

TEST(ChatTemplateModels, SpecialTokensComeFromTheConfig) {
  EXPECT_EQ(load_fixture("tokenizer-llama3").special_tokens(),
            (std::map<std::string, std::string>{{"bos_token", "<|begin_of_text|>"},
                                                {"eos_token", "<|eot_id|>"}}));
  // Qwen3's bos_token and unk_token are null: left out, so undefined in the template.
  EXPECT_EQ(load_fixture("tokenizer-qwen3").special_tokens(),
            (std::map<std::string, std::string>{{"eos_token", "<|im_end|>"},
                                                {"pad_token", "<|endoftext|>"}}));
  EXPECT_EQ(
      ChatTemplate::read_special_tokens(fixtures_dir() + "/tokenizer-mistral").at("bos_token"),
      "<s>");
}

TEST(ChatTemplateModels, ConfigsWithoutATemplateAreClearErrors) {
  for (const char* dir : {"tokenizer-mistral", "tokenizer-gpt2"})
    expect_error([&] { load_fixture(dir); }, {dir, "has no \"chat_template\""});
  expect_error([] { ChatTemplate::from_tokenizer_config("/nonexistent/model"); },
               "no such file or directory");
}

class ChatTemplateDirectory : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(testing::TempDir()) /
           ("dq4_chat_template_dir_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(ChatTemplateDirectory, NamedTemplatesAndAddedTokenObjects) {
  write("tokenizer_config.json", R"({
    "bos_token": {"content": "<bos>", "lstrip": false, "__type": "AddedToken"},
    "eos_token": null,
    "chat_template": [{"name": "tool_use", "template": "tools"},
                      {"name": "default", "template": "{{ bos_token }}{{ messages|length }}"}]})");
  const ChatTemplate t = ChatTemplate::from_tokenizer_config(dir_.string());
  EXPECT_EQ(t.render(R"([{"role": "user", "content": "x"}])", false), "<bos>1");
  EXPECT_EQ(ChatTemplate::from_tokenizer_config((dir_ / "tokenizer_config.json").string())
                .render("[]", false),
            "<bos>0");
}

TEST_F(ChatTemplateDirectory, ChatTemplateJinjaWins) {
  write("tokenizer_config.json", R"({"eos_token": "</s>", "chat_template": "config"})");
  write("chat_template.jinja", "jinja {{ eos_token }}\n");
  EXPECT_EQ(ChatTemplate::from_tokenizer_config(dir_.string()).render("[]", true), "jinja </s>");
}

// A multimodal repository may keep the template in its processor's chat_template.json only; the
// tokenizer's own template comes first, as in transformers and vLLM.
TEST_F(ChatTemplateDirectory, ProcessorChatTemplateJsonIsTheLastResort) {
  write("chat_template.json", R"({"chat_template": "processor {{ eos_token }}"})");
  write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  EXPECT_EQ(ChatTemplate::from_tokenizer_config(dir_.string()).render("[]", false),
            "processor </s>");
  write("tokenizer_config.json", R"({"eos_token": "</s>", "chat_template": "config"})");
  EXPECT_EQ(ChatTemplate::from_tokenizer_config(dir_.string()).render("[]", false), "config");
  std::filesystem::remove(dir_ / "tokenizer_config.json");
  EXPECT_EQ(ChatTemplate::find_source(dir_.string()), "processor {{ eos_token }}");
  write("chat_template.json", R"({"chat_template": 7})");
  expect_error([&] { ChatTemplate::find_source(dir_.string()); },
               {"chat_template.json", "must be a string"});
  std::filesystem::remove(dir_ / "chat_template.json");
  EXPECT_EQ(ChatTemplate::find_source(dir_.string()), std::nullopt);
  expect_error([&] { ChatTemplate::from_tokenizer_config(dir_.string()); },
               "has no tokenizer_config.json, chat_template.jinja or chat_template.json");
}

TEST_F(ChatTemplateDirectory, BadConfigsAreClearErrors) {
  write("tokenizer_config.json", R"({"chat_template": [{"name": "rag", "template": "x"}]})");
  expect_error([&] { ChatTemplate::from_tokenizer_config(dir_.string()); },
               "no template named \"default\" (has: rag)");
  write("tokenizer_config.json", R"({"chat_template": 5})");
  expect_error([&] { ChatTemplate::from_tokenizer_config(dir_.string()); }, "must be a string");
  write("tokenizer_config.json", "{not json");
  expect_error([&] { ChatTemplate::from_tokenizer_config(dir_.string()); }, "not valid JSON");
}

TEST(ChatTemplateContext, VariablesAsTransformersPassesThem) {
  const ChatTemplate t = ChatTemplate::from_source(
      "{{ tools is none }}{{ documents is none }}{{ add_generation_prompt }}{{ custom }}"
      "{{ messages[0].content }}");
  EXPECT_EQ(t.render(R"({"messages": [{"role": "user", "content": "m"}], "custom": 7})", true),
            "TrueTrueTrue7m");
  // The argument sets add_generation_prompt, whatever the context says.
  EXPECT_EQ(ChatTemplate::from_source("{{ tools is none }}{{ add_generation_prompt }}")
                .render(R"({"messages": [], "tools": [], "add_generation_prompt": true})", false),
            "FalseFalse");
}

TEST(ChatTemplateContext, BadContextsAreClearErrors) {
  const ChatTemplate t = ChatTemplate::from_source("x");
  expect_error([&] { t.render("{", false); }, "not valid JSON");
  expect_error([&] { t.render("5", false); }, "expected a JSON object or an array of messages");
  expect_error([&] { t.render(R"({"tools": []})", false); }, "\"messages\" must be an array");
  std::string deep =
      R"({"messages": [], "x": )" + std::string(1000, '[') + std::string(1000, ']') + "}";
  expect_error([&] { t.render(deep, false); }, "nested more than");
}

}  // namespace
}  // namespace dq4::test
