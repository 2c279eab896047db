#include <set>

#include "code_points.h"
#include "dq4/constrain/constraint.h"
#include "dq4/constrain/to_gbnf.h"
#include "gbnf_writer.h"

namespace dq4::constrain {
std::string choice_to_gbnf(std::span<const std::string> choices, std::string_view rule_prefix) {
  if (choices.empty()) throw ConstraintError("choice: the list of choices is empty");
  RuleSet rules(rule_prefix);
  const std::string root = rules.fresh_name("root");
  std::set<std::string_view> seen;
  std::string body;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (!valid_utf8(choices[i])) {
      throw ConstraintError("choice: choice " + std::to_string(i) + " is not valid UTF-8");
    }
    if (!seen.insert(choices[i]).second) continue;
    if (!body.empty()) body += " | ";
    body += gbnf_literal(choices[i]);
  }
  rules.define(root, body);
  return rules.text();
}

}  // namespace dq4::constrain
