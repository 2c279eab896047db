#pragma once
// A JSON string (quotes and trailing whitespace included) that is none of a set of names: the key
// of a property additionalProperties allows, which must not repeat a declared property's name
// (with duplicate keys the last one counts, and its value answers to the other schema).

#include <string>
#include <vector>

#include "gbnf_writer.h"
#include "json_rules.h"

namespace dq4::constrain {

// The names are matched as JSON writes them (nlohmann's dump, escapes only where required).
// While the key follows a name's text no escape may start there but the name's own, so that
// what the grammar accepts never decodes to one of the names.
std::string key_excluding_gbnf(const std::vector<std::string>& names, RuleSet& rules,
                               JsonRules& json);

}  // namespace dq4::constrain
