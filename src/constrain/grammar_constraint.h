#pragma once
// A grammar compiled for a vocabulary: the Constraint the compiler hands out for every kind.

#include <memory>
#include <mutex>

#include "byte_grammar.h"
#include "dq4/constrain/constraint.h"
#include "vocabulary.h"

namespace dq4::constrain {

struct SharedAutomaton;

class GrammarConstraint : public Constraint {
 public:
  GrammarConstraint(std::shared_ptr<const ByteGrammar> grammar,
                    std::shared_ptr<const Vocabulary> vocabulary);
  ~GrammarConstraint() override;
  // Thread-safe, as are the matchers' calls on different matchers.
  std::unique_ptr<Matcher> matcher() const override;
  const ByteGrammar& grammar() const { return *grammar_; }

 private:
  std::shared_ptr<const ByteGrammar> grammar_;
  std::shared_ptr<const Vocabulary> vocabulary_;
  mutable std::mutex mutex_;
  mutable std::shared_ptr<SharedAutomaton> current_;  // what new matchers share
};

}  // namespace dq4::constrain
