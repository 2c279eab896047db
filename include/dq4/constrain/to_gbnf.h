#pragma once
// The constraint kinds other than grammars, written as GBNF grammars that the compiler compiles
// like a user's own. Each returns a grammar whose rules are all named `rule_prefix` + a name, the
// whole output matched by `rule_prefix` + "root" (a prefix lets a caller embed several, e.g. one
// per tool's parameters, in one larger grammar). Each throws ConstraintError naming the keyword,
// construct or position it cannot express.

#include <span>
#include <string>
#include <string_view>

namespace dq4::constrain {

// A JSON Schema (as JSON text): the output is one JSON value the schema accepts, properties in
// the schema's order, whitespace bounded (src/constrain/json_rules.h). The keywords it acts on,
// ignores and refuses: src/constrain/schema_keywords.h.
std::string json_schema_to_gbnf(std::string_view schema_json, std::string_view rule_prefix = "");
// Any JSON object.
std::string json_object_gbnf(std::string_view rule_prefix = "");
// A regular expression (the ECMAScript / Python subset both accept), matching the whole output
// (src/constrain/regex_ast.h).
std::string regex_to_gbnf(std::string_view pattern, std::string_view rule_prefix = "");
// Exactly one of `choices`.
std::string choice_to_gbnf(std::span<const std::string> choices, std::string_view rule_prefix = "");

}  // namespace dq4::constrain
