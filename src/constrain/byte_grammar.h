#pragma once
// A grammar compiled to bytes: one NFA per rule over byte ranges, with call edges into other
// rules (a pushdown automaton). Code point classes become the byte sequences of their UTF-8.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gbnf_ast.h"

namespace dq4::constrain {

// The most NFA states a grammar may compile to (repetitions copy their item).
inline constexpr size_t kMaxGrammarStates = 1 << 18;

struct ByteGrammar {
  struct ByteEdge {
    uint8_t lo, hi;  // inclusive
    int32_t target;
  };
  struct Call {
    int32_t rule;
    int32_t ret;  // where the caller continues once the rule has matched
  };
  struct State {
    std::vector<ByteEdge> bytes;
    std::vector<int32_t> epsilons;
    std::vector<Call> calls;
    bool is_rule_end = false;  // the rule has matched: return to the caller
  };
  std::vector<State> states;
  std::vector<int32_t> rule_start, rule_end;
  std::vector<std::string> rule_names;
  int32_t root = -1;
};

// Compiles `grammar` (parsed from `text`, named in messages) with `root_name` as the start.
// Throws ConstraintError for an undefined rule, a missing root, left recursion, a grammar that
// matches nothing or one too large.
ByteGrammar compile_grammar(const GbnfGrammar& grammar, std::string_view text,
                            std::string_view root_name = "root");

// Appends to `out` the byte-range sequences whose concatenations are exactly the UTF-8 of the
// code points in [lo, hi] (no surrogates inside).
void utf8_sequences(char32_t lo, char32_t hi,
                    std::vector<std::vector<std::pair<uint8_t, uint8_t>>>& out);

}  // namespace dq4::constrain
