// One sequence's matcher: the lazily determinized pushdown automaton, the history of its states
// (one per accepted token) and the mask: the vocabulary's trie walked against the automaton.

#include <algorithm>

#include "grammar_constraint.h"
#include "stack_automaton.h"

namespace dq4::constrain {
namespace {

class GrammarMatcher : public Matcher {
 public:
  GrammarMatcher(std::shared_ptr<const ByteGrammar> grammar,
                 std::shared_ptr<const Vocabulary> vocabulary)
      : automaton_(std::move(grammar)),
        vocabulary_(std::move(vocabulary)),
        depth_states_(vocabulary_->max_depth() + 1) {
    history_.push_back(automaton_.initial());
  }

  void fill_mask(std::span<uint64_t> allowed) override {
    const size_t words = static_cast<size_t>((vocabulary_->size() + 63) / 64);
    if (allowed.size() != words)
      throw Error("Matcher::fill_mask: " + std::to_string(allowed.size()) + " words for " +
                  std::to_string(vocabulary_->size()) + " tokens (expected " +
                  std::to_string(words) + ")");
    std::fill(allowed.begin(), allowed.end(), 0);
    const int32_t state = history_.back();
    if (state == kEnded) return;
    const auto& nodes = vocabulary_->nodes();
    const auto& tokens = vocabulary_->trie_tokens();
    const auto& byte_sets = vocabulary_->byte_sets();
    auto allow = [&](uint32_t begin, uint32_t end) {
      for (uint32_t i = begin; i < end; ++i) {
        const auto t = static_cast<uint32_t>(tokens[i]);
        allowed[t / 64] |= uint64_t{1} << (t % 64);
      }
    };
    depth_states_[0] = state;
    const size_t last = nodes.size() - 1;  // the sentinel
    for (size_t n = 0; n < last;) {
      const Vocabulary::Node& node = nodes[n];
      const int32_t next = automaton_.step(depth_states_[node.depth - 1u], node.byte);
      if (next == StackAutomaton::kDead) {
        n = node.subtree_end;
        continue;
      }
      if (node.byte_set >= 0 &&
          subset(byte_sets[static_cast<size_t>(node.byte_set)], automaton_.self_loops(next))) {
        // Every byte below keeps the automaton where it is: the whole subtree is allowed.
        allow(node.token_begin, nodes[node.subtree_end].token_begin);
        n = node.subtree_end;
        continue;
      }
      allow(node.token_begin, nodes[n + 1].token_begin);
      depth_states_[node.depth] = next;
      ++n;
    }
    if (automaton_.can_end(state))
      for (const TokenId id : vocabulary_->eos_ids())
        allowed[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
  }

  bool accept(TokenId token) override {
    const int32_t state = history_.back();
    if (state == kEnded) return false;
    if (vocabulary_->is_eos(token)) {
      if (!automaton_.can_end(state)) return false;
      history_.push_back(kEnded);
      return true;
    }
    const std::string* bytes = vocabulary_->bytes(token);
    if (bytes == nullptr) return false;
    int32_t next = state;
    for (const char c : *bytes) {
      next = automaton_.step(next, static_cast<uint8_t>(c));
      if (next == StackAutomaton::kDead) return false;
    }
    history_.push_back(next);
    return true;
  }

  void rollback(int tokens) override {
    if (tokens < 0 || static_cast<size_t>(tokens) >= history_.size())
      throw Error("Matcher::rollback(" + std::to_string(tokens) + "): only " +
                  std::to_string(history_.size() - 1) + " tokens accepted");
    history_.resize(history_.size() - static_cast<size_t>(tokens));
  }

  bool can_end() const override {
    return history_.back() == kEnded || automaton_.can_end(history_.back());
  }
  bool is_ended() const override {
    return history_.back() == kEnded || automaton_.is_final(history_.back());
  }
  int64_t vocab_size() const override { return vocabulary_->size(); }

 private:
  static constexpr int32_t kEnded = -3;  // in history_: EOS accepted

  static bool subset(const Vocabulary::ByteSet& a, const std::array<uint64_t, 4>& b) {
    return (a[0] & ~b[0]) == 0 && (a[1] & ~b[1]) == 0 && (a[2] & ~b[2]) == 0 && (a[3] & ~b[3]) == 0;
  }

  StackAutomaton automaton_;
  std::shared_ptr<const Vocabulary> vocabulary_;
  std::vector<int32_t> history_;       // the state after each accepted token, initial first
  std::vector<int32_t> depth_states_;  // fill_mask: the state at each depth of the trie walk
};

}  // namespace

std::unique_ptr<Matcher> GrammarConstraint::matcher() const {
  return std::make_unique<GrammarMatcher>(grammar_, vocabulary_);
}

}  // namespace dq4::constrain
