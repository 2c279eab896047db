// Matchers of a grammar constraint. The lazily determinized automaton and the masks it has
// computed are shared by the constraint's matchers (one sequence's states and masks serve the
// next request with the same constraint), under a mutex; each matcher keeps only the history of
// its states (one per accepted token). The mask walks the vocabulary's trie against the automaton.

#include <algorithm>
#include <mutex>

#include "grammar_constraint.h"
#include "stack_automaton.h"

namespace dq4::constrain {

// The automaton shared by the matchers started while it was the constraint's current one.
struct SharedAutomaton {
  // A full automaton stays with the matchers holding it; new matchers get a fresh one (bounding
  // the memory a long-lived constraint takes).
  static constexpr size_t kMaxStates = 8192;
  static constexpr size_t kCachedMasks = 64;

  SharedAutomaton(std::shared_ptr<const ByteGrammar> grammar, const Vocabulary& vocabulary)
      : automaton(std::move(grammar)), depth_states(vocabulary.max_depth() + 1) {}

  std::mutex mutex;
  StackAutomaton automaton;
  std::vector<int32_t> depth_states;  // fill_mask: the state at each depth of the trie walk
  struct CachedMask {
    int32_t state;
    uint64_t last_use;
    std::vector<uint64_t> mask;
  };
  std::vector<CachedMask> masks;  // the masks of recently seen states, least recent replaced
  uint64_t clock = 0;
};

namespace {

class GrammarMatcher : public Matcher {
 public:
  GrammarMatcher(std::shared_ptr<SharedAutomaton> shared,
                 std::shared_ptr<const Vocabulary> vocabulary)
      : shared_(std::move(shared)), vocabulary_(std::move(vocabulary)) {
    std::lock_guard lock(shared_->mutex);
    history_.push_back(shared_->automaton.initial());
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
    std::lock_guard lock(shared_->mutex);
    for (SharedAutomaton::CachedMask& cached : shared_->masks) {
      if (cached.state == state) {
        cached.last_use = ++shared_->clock;
        std::copy(cached.mask.begin(), cached.mask.end(), allowed.begin());
        return;
      }
    }
    walk(state, allowed);
    if (shared_->automaton.can_end(state))
      for (const TokenId id : vocabulary_->eos_ids())
        allowed[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
    remember(state, allowed);
  }

  bool accept(TokenId token) override {
    const int32_t state = history_.back();
    if (state == kEnded) return false;
    std::lock_guard lock(shared_->mutex);
    if (vocabulary_->is_eos(token)) {
      if (!shared_->automaton.can_end(state)) return false;
      history_.push_back(kEnded);
      return true;
    }
    const std::string* bytes = vocabulary_->bytes(token);
    if (bytes == nullptr) return false;
    int32_t next = state;
    for (const char c : *bytes) {
      next = shared_->automaton.step(next, static_cast<uint8_t>(c));
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
    if (history_.back() == kEnded) return true;
    std::lock_guard lock(shared_->mutex);
    return shared_->automaton.can_end(history_.back());
  }
  bool is_ended() const override {
    if (history_.back() == kEnded) return true;
    std::lock_guard lock(shared_->mutex);
    return shared_->automaton.is_final(history_.back());
  }
  int64_t vocab_size() const override { return vocabulary_->size(); }

 private:
  static constexpr int32_t kEnded = -3;  // in history_: EOS accepted

  // Sets the bit of every token whose bytes the automaton takes from `state`, the shared prefixes
  // of tokens walked once (preorder over the trie; a dead node skips its subtree).
  void walk(int32_t state, std::span<uint64_t> allowed) {
    StackAutomaton& automaton = shared_->automaton;
    std::vector<int32_t>& depth_states = shared_->depth_states;
    const auto& nodes = vocabulary_->nodes();
    const auto& tokens = vocabulary_->trie_tokens();
    const auto& byte_sets = vocabulary_->byte_sets();
    auto allow = [&](uint32_t begin, uint32_t end) {
      for (uint32_t i = begin; i < end; ++i) {
        const auto t = static_cast<uint32_t>(tokens[i]);
        allowed[t / 64] |= uint64_t{1} << (t % 64);
      }
    };
    depth_states[0] = state;
    const size_t last = nodes.size() - 1;  // the sentinel
    for (size_t n = 0; n < last;) {
      const Vocabulary::Node& node = nodes[n];
      const int32_t next = automaton.step(depth_states[node.depth - 1u], node.byte);
      if (next == StackAutomaton::kDead) {
        n = node.subtree_end;
        continue;
      }
      if (node.byte_set >= 0 &&
          keeps_state(byte_sets[static_cast<size_t>(node.byte_set)], node.utf8_below, next)) {
        allow(node.token_begin, nodes[node.subtree_end].token_begin);
        n = node.subtree_end;
        continue;
      }
      allow(node.token_begin, nodes[n + 1].token_begin);
      depth_states[node.depth] = next;
      ++n;
    }
  }

  // Whether every token below a node (of bytes `below`) keeps the automaton alive from `state`:
  // each of their bytes steps `state` to itself, or (for text that is whole UTF-8 characters) each
  // ASCII byte does and every non-ASCII character leads back to it.
  bool keeps_state(const Vocabulary::ByteSet& below, bool utf8_below, int32_t state) {
    StackAutomaton& automaton = shared_->automaton;
    const std::array<uint64_t, 4>& loops = automaton.self_loops(state);
    if ((below[0] & ~loops[0]) != 0 || (below[1] & ~loops[1]) != 0) return false;
    if ((below[2] & ~loops[2]) == 0 && (below[3] & ~loops[3]) == 0) return true;
    return utf8_below && automaton.loops_on_non_ascii(state);
  }

  void remember(int32_t state, std::span<const uint64_t> mask) {
    auto& masks = shared_->masks;
    SharedAutomaton::CachedMask* slot = nullptr;
    if (masks.size() < SharedAutomaton::kCachedMasks) {
      slot = &masks.emplace_back();
    } else {
      slot = &*std::min_element(masks.begin(), masks.end(), [](const auto& a, const auto& b) {
        return a.last_use < b.last_use;
      });
    }
    slot->state = state;
    slot->last_use = ++shared_->clock;
    slot->mask.assign(mask.begin(), mask.end());
  }

  std::shared_ptr<SharedAutomaton> shared_;
  std::shared_ptr<const Vocabulary> vocabulary_;
  std::vector<int32_t> history_;  // the state after each accepted token, initial first
};

}  // namespace

GrammarConstraint::GrammarConstraint(std::shared_ptr<const ByteGrammar> grammar,
                                     std::shared_ptr<const Vocabulary> vocabulary)
    : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)) {}

GrammarConstraint::~GrammarConstraint() = default;

std::unique_ptr<Matcher> GrammarConstraint::matcher() const {
  std::shared_ptr<SharedAutomaton> shared;
  {
    std::lock_guard lock(mutex_);
    if (current_) {
      std::lock_guard automaton_lock(current_->mutex);
      if (current_->automaton.state_count() >= SharedAutomaton::kMaxStates) current_.reset();
    }
    if (!current_) current_ = std::make_shared<SharedAutomaton>(grammar_, *vocabulary_);
    shared = current_;
  }
  return std::make_unique<GrammarMatcher>(std::move(shared), vocabulary_);
}

}  // namespace dq4::constrain
