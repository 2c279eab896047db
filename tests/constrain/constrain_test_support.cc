#include "constrain_test_support.h"

#include "gbnf_parser.h"
#include "stack_automaton.h"

namespace dq4::test {

using constrain::ByteGrammar;

ByteGrammar grammar_of(std::string_view gbnf) {
  return constrain::compile_grammar(constrain::parse_gbnf(gbnf), gbnf);
}

namespace {

int32_t run_automaton(std::string_view gbnf, std::string_view text, bool* can_end) {
  constrain::StackAutomaton automaton(std::make_shared<ByteGrammar>(grammar_of(gbnf)));
  int32_t state = automaton.initial();
  for (const char c : text) {
    state = automaton.step(state, static_cast<uint8_t>(c));
    if (state == constrain::StackAutomaton::kDead) return state;
  }
  *can_end = automaton.can_end(state);
  return state;
}

}  // namespace

bool grammar_matches(std::string_view gbnf, std::string_view text) {
  bool can_end = false;
  return run_automaton(gbnf, text, &can_end) != constrain::StackAutomaton::kDead && can_end;
}

bool grammar_prefix(std::string_view gbnf, std::string_view text) {
  bool can_end = false;
  return run_automaton(gbnf, text, &can_end) != constrain::StackAutomaton::kDead;
}

BruteForceAutomaton::BruteForceAutomaton(const ByteGrammar& grammar) : g_(grammar) {
  State start;
  std::set<Stack> visited;
  close({g_.rule_start[static_cast<size_t>(g_.root)]}, start, visited);
  intern(std::move(start));
}

void BruteForceAutomaton::close(Stack stack, State& out, std::set<Stack>& visited) const {
  if (!visited.insert(stack).second) return;
  const ByteGrammar::State& st = g_.states[static_cast<size_t>(stack.back())];
  if (!st.bytes.empty()) out.stacks.insert(stack);
  for (const int32_t t : st.epsilons) {
    Stack next = stack;
    next.back() = t;
    close(std::move(next), out, visited);
  }
  for (const auto& call : st.calls) {
    Stack next = stack;
    next.back() = call.ret;
    next.push_back(g_.rule_start[static_cast<size_t>(call.rule)]);
    close(std::move(next), out, visited);
  }
  if (st.is_rule_end) {
    Stack next = stack;
    next.pop_back();
    if (next.empty()) {
      out.can_end = true;
    } else {
      close(std::move(next), out, visited);
    }
  }
}

int BruteForceAutomaton::intern(State state) {
  if (state.stacks.empty() && !state.can_end) return -1;
  const auto [it, added] = ids_.emplace(state, static_cast<int>(states_.size()));
  if (added) {
    states_.push_back(std::move(state));
    steps_.emplace_back();
    steps_.back().fill(-2);
  }
  return it->second;
}

int BruteForceAutomaton::step(int state, uint8_t byte) {
  if (steps_[static_cast<size_t>(state)][byte] != -2)
    return steps_[static_cast<size_t>(state)][byte];
  State next;
  std::set<Stack> visited;
  const std::set<Stack> stacks = states_[static_cast<size_t>(state)].stacks;
  for (const Stack& stack : stacks) {
    for (const auto& edge : g_.states[static_cast<size_t>(stack.back())].bytes) {
      if (byte < edge.lo || byte > edge.hi) continue;
      Stack moved = stack;
      moved.back() = edge.target;
      close(std::move(moved), next, visited);
    }
  }
  const int id = intern(std::move(next));
  steps_[static_cast<size_t>(state)][byte] = id;
  return id;
}

int BruteForceAutomaton::run(int state, std::string_view bytes) {
  for (const char c : bytes) {
    if (state < 0) return -1;
    state = step(state, static_cast<uint8_t>(c));
  }
  return state;
}

std::vector<uint64_t> brute_force_mask(BruteForceAutomaton& automaton, int state,
                                       const Tokenizer& tokenizer, int64_t vocab_size,
                                       const std::vector<TokenId>& eos_ids) {
  std::vector<uint64_t> mask(static_cast<size_t>((vocab_size + 63) / 64), 0);
  auto set = [&](TokenId id) { mask[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64); };
  for (TokenId id = 0; id < vocab_size; ++id) {
    bool eos = false;
    for (const TokenId e : eos_ids) eos = eos || e == id;
    if (eos) {
      if (automaton.can_end(state)) set(id);
      continue;
    }
    if (tokenizer.is_special(id)) continue;
    const std::optional<std::string> bytes = tokenizer.token_bytes(id);
    if (!bytes || bytes->empty()) continue;
    if (automaton.run(state, *bytes) >= 0) set(id);
  }
  return mask;
}

const std::vector<SampleGrammar>& sample_grammars() {
  static const std::vector<SampleGrammar> samples = {
      {"json",
       R"g(# Any JSON value.
root   ::= ws value ws
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n]*
)g",
       {R"g({"name": "Ada Lovelace", "born": 1815, "tags": ["math", "poetry\n", "\u00e9t\u00e9"], "alive": false, "ratio": -0.5e3, "nested": {"a": [1, 2, {"b": null}], "empty": {}}})g",
        R"g([{"city": "Zürich", "note": "naïve café — 東京 🚀", "n": 0}, [], [true, false]])g"}},
      {"schema",
       R"g(root ::= "{" ws "\"name\":" ws str ws "," ws "\"age\":" ws int ws "," ws "\"email\":" ws str ws "," ws "\"tags\":" ws "[" ws ( str ( ws "," ws str ){0,4} )? ws "]" ws "}"
str  ::= "\"" ( [^"\\\x00-\x1F] | "\\" ["\\/bfnrt] ){0,40} "\""
int  ::= "-"? [0-9]{1,9}
ws   ::= [ \n]{0,2}
)g",
       {R"g({"name": "Grace Hopper", "age": 85, "email": "grace@navy.mil", "tags": ["cobol", "compilers", "navy"]})g"}},
      {"regex",
       R"g(root ::= word ( " " word ){0,5} ", " [0-9]{5} ( "-" [0-9]{4} )? " (" ( "US" | "CA" | "MX" ) ")"
word ::= [A-Z] [a-z]{1,20}
)g",
       {"Springfield Falls, 12345-6789 (US)", "Oaxaca, 68000 (MX)"}},
  };
  return samples;
}

}  // namespace dq4::test
