// One sequence's matcher: the lazily determinized pushdown automaton, the history of its states
// (one per accepted token) and the mask: the vocabulary's trie walked against the automaton.

#include <algorithm>
#include <array>

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
    for (const CachedMask& cached : cache_) {
      if (cached.state == state) {
        std::copy(cached.mask.begin(), cached.mask.end(), allowed.begin());
        return;
      }
    }
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
          keeps_state(byte_sets[static_cast<size_t>(node.byte_set)], node.utf8_below, next)) {
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
    // Free text (a string's characters) keeps the automaton in one state token after token.
    CachedMask& slot = cache_[next_slot_];
    next_slot_ = (next_slot_ + 1) % cache_.size();
    slot.state = state;
    slot.mask.assign(allowed.begin(), allowed.end());
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

  // Whether every token below a node (of bytes `below`) keeps the automaton alive from `state`:
  // each of their bytes steps `state` to itself, or (for text that is whole UTF-8 characters) each
  // ASCII byte does and every non-ASCII character leads back to it.
  bool keeps_state(const Vocabulary::ByteSet& below, bool utf8_below, int32_t state) {
    const std::array<uint64_t, 4>& loops = automaton_.self_loops(state);
    if ((below[0] & ~loops[0]) != 0 || (below[1] & ~loops[1]) != 0) return false;
    if ((below[2] & ~loops[2]) == 0 && (below[3] & ~loops[3]) == 0) return true;
    return utf8_below && automaton_.loops_on_non_ascii(state);
  }

  StackAutomaton automaton_;
  std::shared_ptr<const Vocabulary> vocabulary_;
  std::vector<int32_t> history_;       // the state after each accepted token, initial first
  std::vector<int32_t> depth_states_;  // fill_mask: the state at each depth of the trie walk
  struct CachedMask {
    int32_t state = kEnded;
    std::vector<uint64_t> mask;
  };
  std::array<CachedMask, 4> cache_;  // the last masks computed, by state
  size_t next_slot_ = 0;
};

}  // namespace

std::unique_ptr<Matcher> GrammarConstraint::matcher() const {
  return std::make_unique<GrammarMatcher>(grammar_, vocabulary_);
}

}  // namespace dq4::constrain
