#include "sequence_set_constraint.h"

#include <algorithm>
#include <stdexcept>

namespace dq4::test {

namespace {

bool starts_with(const std::vector<TokenId>& seq, const std::vector<TokenId>& prefix) {
  return seq.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), seq.begin());
}

}  // namespace

class SequenceSetMatcher : public constrain::Matcher {
 public:
  explicit SequenceSetMatcher(const SequenceSetConstraint& c) : c_(c) {
    accepted_.reserve(c.longest_ + 1);
  }

  void fill_mask(std::span<uint64_t> allowed) override {
    std::fill(allowed.begin(), allowed.end(), 0);
    if (eos_accepted_) return;
    const auto set = [&](TokenId t) { allowed[t / 64] |= uint64_t{1} << (t % 64); };
    for (const auto& seq : c_.sequences_)
      if (starts_with(seq, accepted_) && seq.size() > accepted_.size()) set(seq[accepted_.size()]);
    if (can_end())
      for (TokenId e : c_.eos_) set(e);
  }

  bool accept(TokenId token) override {
    if (eos_accepted_) return false;
    if (std::find(c_.eos_.begin(), c_.eos_.end(), token) != c_.eos_.end()) {
      if (!can_end()) return false;
      eos_accepted_ = true;
      return true;
    }
    for (const auto& seq : c_.sequences_)
      if (starts_with(seq, accepted_) && seq.size() > accepted_.size() &&
          seq[accepted_.size()] == token) {
        accepted_.push_back(token);
        return true;
      }
    return false;
  }

  void rollback(int tokens) override {
    if (tokens > 0 && eos_accepted_) {
      eos_accepted_ = false;
      --tokens;
    }
    accepted_.resize(accepted_.size() - static_cast<size_t>(tokens));
  }

  bool can_end() const override {
    for (const auto& seq : c_.sequences_)
      if (seq == accepted_) return true;
    return false;
  }

  bool is_ended() const override {
    if (eos_accepted_) return true;
    for (const auto& seq : c_.sequences_)
      if (starts_with(seq, accepted_) && seq.size() > accepted_.size()) return false;
    return true;
  }

  int64_t vocab_size() const override { return c_.vocab_; }

 private:
  const SequenceSetConstraint& c_;
  std::vector<TokenId> accepted_;
  bool eos_accepted_ = false;
};

SequenceSetConstraint::SequenceSetConstraint(std::vector<std::vector<TokenId>> sequences,
                                             int64_t vocab, std::vector<TokenId> eos)
    : sequences_(std::move(sequences)), vocab_(vocab), eos_(std::move(eos)) {
  for (const auto& seq : sequences_) {
    if (seq.empty()) throw std::invalid_argument("an empty sequence");
    longest_ = std::max(longest_, seq.size());
  }
}

std::unique_ptr<constrain::Matcher> SequenceSetConstraint::matcher() const {
  return std::make_unique<SequenceSetMatcher>(*this);
}

std::vector<TokenId> SequenceSetConstraint::allowed_after(
    const std::vector<TokenId>& prefix) const {
  SequenceSetMatcher m(*this);
  for (TokenId t : prefix)
    if (!m.accept(t)) return {};
  std::vector<uint64_t> mask(static_cast<size_t>((vocab_ + 63) / 64));
  m.fill_mask(mask);
  std::vector<TokenId> out;
  for (TokenId t = 0; t < vocab_; ++t)
    if (mask[t / 64] >> (t % 64) & 1) out.push_back(t);
  return out;
}

}  // namespace dq4::test
