#pragma once
// A GBNF grammar as parsed: rules of expressions over code points, before compilation to bytes.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace dq4::constrain {

// Inclusive code point ranges, sorted, disjoint, never touching a surrogate.
using CodePointRanges = std::vector<std::pair<char32_t, char32_t>>;

struct GbnfExpr {
  enum class Kind { sequence, alternatives, literal, char_class, rule_ref, repeat };
  Kind kind = Kind::sequence;
  std::vector<GbnfExpr> items;  // sequence, alternatives; repeat: the one repeated item
  std::string bytes;            // literal: its UTF-8
  CodePointRanges ranges;       // char_class (negation already applied)
  std::string name;             // rule_ref
  int min = 0, max = -1;        // repeat: max -1 is unbounded
  size_t offset = 0;            // where it starts in the grammar text
};

struct GbnfRule {
  std::string name;
  GbnfExpr body;
  size_t offset = 0;
};

struct GbnfGrammar {
  std::vector<GbnfRule> rules;  // in the text's order
};

}  // namespace dq4::constrain
