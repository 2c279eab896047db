#pragma once
// Runs a GBNF grammar (the converters' output) on whole texts, byte by byte, through the
// constraint layer's own parser and automaton: what the grammar accepts is what a matcher lets a
// model write.

#include <memory>
#include <string>
#include <string_view>

#include "byte_grammar.h"
#include "gbnf_parser.h"
#include "stack_automaton.h"

namespace dq4::test {

class GbnfAcceptor {
 public:
  explicit GbnfAcceptor(const std::string& gbnf, std::string_view root = "root")
      : automaton_(std::make_shared<constrain::ByteGrammar>(
            constrain::compile_grammar(constrain::parse_gbnf(gbnf), gbnf, root))) {}

  bool accepts(std::string_view text) {
    int32_t state = automaton_.initial();
    for (char c : text) {
      state = automaton_.step(state, static_cast<uint8_t>(c));
      if (state == constrain::StackAutomaton::kDead) return false;
    }
    return automaton_.can_end(state);
  }

 private:
  constrain::StackAutomaton automaton_;
};

}  // namespace dq4::test
