#pragma once
// Splits a Jinja2 template into text and tag tokens, applying the whitespace rules transformers
// renders chat templates with: trim_blocks and lstrip_blocks on, `-`/`+` modifiers, a single
// trailing newline dropped, line endings normalized to "\n". {% raw %} bodies become text.

#include <string>
#include <string_view>
#include <vector>

namespace dq4::jinja {

struct Location {
  int line = 0;
  int column = 0;
};

enum class TokenType {
  kText,
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,  // text holds the decoded value
  kInteger,
  kFloat,
  kOperator,  // text holds the operator: "+", "//", "(", ...
  kEnd,       // end of template
};

struct Token {
  TokenType type;
  std::string text;
  Location location;
};

// Throws dq4::Error naming the line and column of malformed tags, strings or comments.
std::vector<Token> tokenize(std::string_view source);

// "line L, column C", the way every template error names a position.
std::string describe(const Location& location);

}  // namespace dq4::jinja
