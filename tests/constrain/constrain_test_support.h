#pragma once
// Helpers of the constraint tests: grammars from GBNF text, whole-text matching, a brute-force
// mask (a separate, plain simulation of the grammar's pushdown automaton with explicit stacks)
// and sample grammars with texts they accept.

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "byte_grammar.h"
#include "dq4/tokenizer/tokenizer.h"

namespace dq4::test {

constrain::ByteGrammar grammar_of(std::string_view gbnf);
// The whole of `text` is a sentence of the grammar.
bool grammar_matches(std::string_view gbnf, std::string_view text);
// `text` can be continued into a sentence (or is one).
bool grammar_prefix(std::string_view gbnf, std::string_view text);

// The grammar's automaton simulated the obvious way: a state is the set of stacks (vectors of NFA
// states, top last) after the bytes so far. States are numbered as they are met so that a whole
// vocabulary can be checked in reasonable time.
class BruteForceAutomaton {
 public:
  explicit BruteForceAutomaton(const constrain::ByteGrammar& grammar);
  int initial() const { return 0; }
  int step(int state, uint8_t byte);  // -1 when no stack takes the byte
  bool can_end(int state) const { return states_[static_cast<size_t>(state)].can_end; }
  int run(int state, std::string_view bytes);  // -1 once dead

 private:
  using Stack = std::vector<int32_t>;
  struct State {
    std::set<Stack> stacks;
    bool can_end = false;
    bool operator<(const State& o) const {
      return stacks != o.stacks ? stacks < o.stacks : can_end < o.can_end;
    }
  };
  void close(Stack stack, State& out, std::set<Stack>& visited) const;
  int intern(State state);

  const constrain::ByteGrammar& g_;
  std::vector<State> states_;
  std::map<State, int> ids_;
  std::vector<std::array<int, 256>> steps_;  // by state and byte; -2 until computed
};

// The mask a matcher must give after `state`, token by token: special tokens and tokens the
// tokenizer lacks never; EOS when the grammar may end; others when all their bytes are taken.
std::vector<uint64_t> brute_force_mask(BruteForceAutomaton& automaton, int state,
                                       const Tokenizer& tokenizer, int64_t vocab_size,
                                       const std::vector<TokenId>& eos_ids);

// Sample grammars of the kinds the compiler produces, each with texts it accepts.
struct SampleGrammar {
  std::string name, gbnf;
  std::vector<std::string> texts;
};
const std::vector<SampleGrammar>& sample_grammars();

}  // namespace dq4::test
