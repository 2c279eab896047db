#include "stack_automaton.h"

#include <algorithm>
#include <string>

#include "dq4/constrain/constraint.h"

namespace dq4::constrain {
namespace {

uint64_t stack_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

}  // namespace

size_t StackAutomaton::KeyHash::operator()(const std::vector<int32_t>& key) const {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (const int32_t v : key) h = (h ^ static_cast<uint32_t>(v)) * 0x100000001B3ull;
  return static_cast<size_t>(h ^ (h >> 29));
}

StackAutomaton::StackAutomaton(std::shared_ptr<const ByteGrammar> grammar)
    : grammar_(std::move(grammar)) {
  close(grammar_->rule_start[static_cast<size_t>(grammar_->root)], -1);
  // Never dead: the compiler refuses a grammar that matches nothing.
  initial_ = intern(std::move(reached_), reached_end_);
}

int32_t StackAutomaton::stack_node(int32_t nfa_state, int32_t below) {
  const auto [it, added] =
      node_ids_.emplace(stack_key(nfa_state, below), static_cast<int32_t>(nodes_.size()));
  if (added) nodes_.push_back({nfa_state, below});
  return it->second;
}

void StackAutomaton::close(int32_t nfa_state, int32_t below) {
  // An explicit work list: the grammar's depth of calls is unbounded.
  std::vector<std::pair<int32_t, int32_t>> work{{nfa_state, below}};
  while (!work.empty()) {
    const auto [s, under] = work.back();
    work.pop_back();
    if (!visited_.insert(stack_key(s, under)).second) continue;
    if (visited_.size() > kMaxStacks)
      throw ConstraintError("grammar: the text so far has more than " + std::to_string(kMaxStacks) +
                            " parses (an ambiguous grammar); constrained decoding stops here");
    const ByteGrammar::State& st = grammar_->states[static_cast<size_t>(s)];
    if (!st.bytes.empty()) reached_.push_back(stack_node(s, under));
    for (const int32_t t : st.epsilons) work.emplace_back(t, under);
    for (const auto& call : st.calls)
      work.emplace_back(grammar_->rule_start[static_cast<size_t>(call.rule)],
                        stack_node(call.ret, under));
    if (st.is_rule_end) {
      if (under < 0) {
        reached_end_ = true;
      } else {
        const StackNode& caller = nodes_[static_cast<size_t>(under)];
        work.emplace_back(caller.nfa_state, caller.below);
      }
    }
  }
}

int32_t StackAutomaton::intern(std::vector<int32_t> stacks, bool can_end) {
  if (stacks.empty() && !can_end) return kDead;
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  stacks.push_back(can_end ? 1 : 0);  // the key: the stacks and whether the output may end
  const auto [it, added] = state_ids_.emplace(stacks, static_cast<int32_t>(states_.size()));
  if (added) {
    stacks.pop_back();
    states_.push_back(State{std::move(stacks), can_end, false, {}, -1});
    transitions_.emplace_back();
    transitions_.back().fill(kUnknown);
  }
  return it->second;
}

int32_t StackAutomaton::compute_step(int32_t state, uint8_t byte) {
  visited_.clear();
  reached_.clear();
  reached_end_ = false;
  // Copied: close() may add states (and so move states_).
  const std::vector<int32_t> stacks = states_[static_cast<size_t>(state)].stacks;
  for (const int32_t id : stacks) {
    const StackNode node = nodes_[static_cast<size_t>(id)];
    for (const auto& edge : grammar_->states[static_cast<size_t>(node.nfa_state)].bytes)
      if (edge.lo <= byte && byte <= edge.hi) close(edge.target, node.below);
  }
  return intern(std::move(reached_), reached_end_);
}

const std::array<uint64_t, 4>& StackAutomaton::self_loops(int32_t state) {
  if (!states_[static_cast<size_t>(state)].loops_known) {
    std::array<uint64_t, 4> loops{};
    for (int b = 0; b < 256; ++b)
      if (step(state, static_cast<uint8_t>(b)) == state) loops[b / 64] |= uint64_t{1} << (b % 64);
    State& s = states_[static_cast<size_t>(state)];
    s.loops = loops;
    s.loops_known = true;
  }
  return states_[static_cast<size_t>(state)].loops;
}

}  // namespace dq4::constrain

namespace dq4::constrain {

bool StackAutomaton::loops_on_non_ascii(int32_t state) {
  if (states_[static_cast<size_t>(state)].non_ascii_loop < 0) {
    static const auto sequences = [] {
      std::vector<std::vector<std::pair<uint8_t, uint8_t>>> out;
      utf8_sequences(0x80, 0xD7FF, out);
      utf8_sequences(0xE000, 0x10FFFF, out);
      return out;
    }();
    bool loops = true;
    std::vector<int32_t> at, next;
    for (size_t q = 0; q < sequences.size() && loops; ++q) {
      at.assign(1, state);
      for (size_t i = 0; i < sequences[q].size() && loops; ++i) {
        next.clear();
        for (const int32_t from : at) {
          for (int b = sequences[q][i].first; b <= sequences[q][i].second && loops; ++b) {
            const int32_t to = step(from, static_cast<uint8_t>(b));
            loops = to != kDead && (i + 1 < sequences[q].size() || to == state);
            next.push_back(to);
          }
        }
        std::sort(next.begin(), next.end());
        next.erase(std::unique(next.begin(), next.end()), next.end());
        at.swap(next);
      }
    }
    states_[static_cast<size_t>(state)].non_ascii_loop = loops ? 1 : 0;
  }
  return states_[static_cast<size_t>(state)].non_ascii_loop == 1;
}

}  // namespace dq4::constrain
