#pragma once
// A parsed regular expression as a GBNF expression.

#include <string>

#include "gbnf_writer.h"
#include "regex_ast.h"

namespace dq4::constrain {

// A GBNF expression (the rules it needs defined in `rules`) matching exactly the strings of `tree`
// (from parse_regex; not Kind::nothing). With `json_string` the strings are written as the inside
// of a JSON string literal: the quote, the backslash and control characters as JSON escapes, every
// other character as itself (so what the grammar accepts decodes to a string the pattern matches).
std::string regex_expression(const RegexNode& tree, RuleSet& rules, bool json_string);

}  // namespace dq4::constrain
