// libFuzzer target: arbitrary bytes as a GBNF grammar. Parsing and compiling must succeed or throw
// ConstraintError; a compiled grammar's automaton then steps through the input's own bytes (its
// literals make likely sentences), which may only stop at a dead state or with ConstraintError
// for an ambiguous grammar's explosion of parses.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "byte_grammar.h"
#include "dq4/constrain/constraint.h"
#include "gbnf_parser.h"
#include "stack_automaton.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dq4::constrain;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::shared_ptr<const ByteGrammar> grammar;
  try {
    grammar = std::make_shared<ByteGrammar>(compile_grammar(parse_gbnf(text), text));
  } catch (const ConstraintError&) {
    return 0;
  }
  try {
    StackAutomaton automaton(grammar);
    int32_t state = automaton.initial();
    for (size_t i = 0; i < size && state != StackAutomaton::kDead; ++i) {
      state = automaton.step(state, data[i]);
      // The mask's check of a whole subtree: all 256 steps of a state (for the first few only).
      if (state != StackAutomaton::kDead && i < 16) automaton.self_loops(state);
    }
  } catch (const ConstraintError&) {
  }
  return 0;
}
