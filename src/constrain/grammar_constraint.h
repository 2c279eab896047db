#pragma once
// A grammar compiled for a vocabulary: the Constraint the compiler hands out for every kind.

#include <memory>

#include "byte_grammar.h"
#include "dq4/constrain/constraint.h"
#include "vocabulary.h"

namespace dq4::constrain {

class GrammarConstraint : public Constraint {
 public:
  GrammarConstraint(std::shared_ptr<const ByteGrammar> grammar,
                    std::shared_ptr<const Vocabulary> vocabulary)
      : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)) {}
  std::unique_ptr<Matcher> matcher() const override;
  const ByteGrammar& grammar() const { return *grammar_; }

 private:
  std::shared_ptr<const ByteGrammar> grammar_;
  std::shared_ptr<const Vocabulary> vocabulary_;
};

}  // namespace dq4::constrain
