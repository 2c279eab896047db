#pragma once
// A constraint for engine tests that needs no grammar: the output is one of a fixed set of token
// sequences. After a whole sequence the EOS ids are allowed; once no longer sequence can follow,
// the matcher has ended (nothing but the end may come). Its matchers allocate nothing after
// construction, so the engine's allocation test can use them.

#include <cstdint>
#include <memory>
#include <vector>

#include "dq4/constrain/constraint.h"

namespace dq4::test {

class SequenceSetConstraint : public constrain::Constraint {
 public:
  SequenceSetConstraint(std::vector<std::vector<TokenId>> sequences, int64_t vocab,
                        std::vector<TokenId> eos);
  std::unique_ptr<constrain::Matcher> matcher() const override;

  // The tokens allowed after `prefix` (EOS included when `prefix` is a whole sequence).
  std::vector<TokenId> allowed_after(const std::vector<TokenId>& prefix) const;
  const std::vector<std::vector<TokenId>>& sequences() const { return sequences_; }

 private:
  friend class SequenceSetMatcher;
  std::vector<std::vector<TokenId>> sequences_;
  int64_t vocab_;
  std::vector<TokenId> eos_;
  size_t longest_ = 0;
};

}  // namespace dq4::test
