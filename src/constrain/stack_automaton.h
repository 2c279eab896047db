#pragma once
// The grammar's pushdown automaton run on bytes, determinized lazily: a state is a set of stacks
// (each a persistent list of NFA states, interned so equal stacks are one id), and each state's
// transitions on the 256 bytes are computed on first use and kept. Not thread-safe; it only
// grows, so state ids stay valid for rollback.

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "byte_grammar.h"

namespace dq4::constrain {

class StackAutomaton {
 public:
  static constexpr int32_t kDead = -1;

  // The most stacks one step may reach: an ambiguous grammar's parses can multiply with each
  // byte. Past it step() throws ConstraintError.
  static constexpr size_t kMaxStacks = 50000;

  explicit StackAutomaton(std::shared_ptr<const ByteGrammar> grammar);

  int32_t initial() const { return initial_; }
  size_t state_count() const { return states_.size(); }
  // The state after `byte`, or kDead when no stack can take it.
  int32_t step(int32_t state, uint8_t byte) {
    const int32_t next = transitions_[static_cast<size_t>(state)][byte];
    if (next != kUnknown) return next;
    const int32_t computed = compute_step(state, byte);  // may grow transitions_
    transitions_[static_cast<size_t>(state)][byte] = computed;
    return computed;
  }
  // The output so far is a complete match.
  bool can_end(int32_t state) const { return states_[static_cast<size_t>(state)].can_end; }
  // No byte may follow.
  bool is_final(int32_t state) const { return states_[static_cast<size_t>(state)].stacks.empty(); }
  // The bytes on which `state` steps to itself.
  const std::array<uint64_t, 4>& self_loops(int32_t state);
  // Every non-ASCII character's UTF-8 leads from `state` back to it (free text in a string).
  bool loops_on_non_ascii(int32_t state);

 private:
  static constexpr int32_t kUnknown = -2;
  struct StackNode {
    int32_t nfa_state;  // the top: a state with byte edges; below the top: a return state
    int32_t below;      // -1 at the bottom
  };
  struct State {
    std::vector<int32_t> stacks;  // sorted stack node ids
    bool can_end = false;
    bool loops_known = false;
    std::array<uint64_t, 4> loops{};
    int8_t non_ascii_loop = -1;  // unknown
  };
  struct KeyHash {
    size_t operator()(const std::vector<int32_t>& key) const;
  };

  int32_t stack_node(int32_t nfa_state, int32_t below);
  // Every stack reachable from (nfa_state, below) without consuming a byte.
  void close(int32_t nfa_state, int32_t below);
  int32_t intern(std::vector<int32_t> stacks, bool can_end);
  int32_t compute_step(int32_t state, uint8_t byte);

  std::shared_ptr<const ByteGrammar> grammar_;
  std::vector<StackNode> nodes_;
  std::unordered_map<uint64_t, int32_t> node_ids_;
  std::vector<State> states_;
  std::vector<std::array<int32_t, 256>> transitions_;
  std::unordered_map<std::vector<int32_t>, int32_t, KeyHash> state_ids_;
  int32_t initial_ = kDead;

  // Scratch of close(): what one step reached.
  std::unordered_set<uint64_t> visited_;
  std::vector<int32_t> reached_;
  bool reached_end_ = false;
};

}  // namespace dq4::constrain
