#include "byte_grammar.h"

#include <unordered_map>

#include "dq4/constrain/constraint.h"
#include "gbnf_parser.h"

namespace dq4::constrain {
namespace {

class NfaBuilder {
 public:
  NfaBuilder(const GbnfGrammar& grammar, std::string_view text, ByteGrammar& out)
      : grammar_(grammar), text_(text), g_(out) {}

  void build() {
    for (const GbnfRule& rule : grammar_.rules) {
      index_.emplace(rule.name, static_cast<int32_t>(g_.rule_names.size()));
      g_.rule_names.push_back(rule.name);
      g_.rule_start.push_back(new_state());
      const int32_t end = new_state();
      g_.states[static_cast<size_t>(end)].is_rule_end = true;
      g_.rule_end.push_back(end);
    }
    for (size_t r = 0; r < grammar_.rules.size(); ++r) {
      rule_ = &grammar_.rules[r];
      const Fragment body = build(rule_->body);
      epsilon(g_.rule_start[r], body.in);
      epsilon(body.out, g_.rule_end[r]);
    }
  }

 private:
  struct Fragment {
    int32_t in, out;
  };

  [[noreturn]] void fail(size_t offset, const std::string& message) const {
    const std::string rule = rule_ ? " (rule '" + rule_->name + "')" : "";
    throw ConstraintError("grammar: " + text_position(text_, offset) + rule + ": " + message);
  }

  int32_t new_state() {
    if (g_.states.size() >= kMaxGrammarStates)
      fail(rule_ ? rule_->offset : 0, "grammar too large (more than " +
                                          std::to_string(kMaxGrammarStates) +
                                          " automaton states; lower the repetition counts)");
    g_.states.emplace_back();
    return static_cast<int32_t>(g_.states.size() - 1);
  }
  ByteGrammar::State& state(int32_t s) { return g_.states[static_cast<size_t>(s)]; }
  void epsilon(int32_t from, int32_t to) { state(from).epsilons.push_back(to); }
  void byte_edge(int32_t from, uint8_t lo, uint8_t hi, int32_t to) {
    state(from).bytes.push_back({lo, hi, to});
  }

  Fragment build(const GbnfExpr& e) {
    switch (e.kind) {
      case GbnfExpr::Kind::literal: {
        const int32_t in = new_state();
        int32_t at = in;
        for (const char c : e.bytes) {
          const int32_t next = new_state();
          byte_edge(at, static_cast<uint8_t>(c), static_cast<uint8_t>(c), next);
          at = next;
        }
        return {in, at};
      }
      case GbnfExpr::Kind::char_class: {
        const Fragment f{new_state(), new_state()};
        std::vector<std::vector<std::pair<uint8_t, uint8_t>>> sequences;
        for (const auto& [lo, hi] : e.ranges) utf8_sequences(lo, hi, sequences);
        for (const auto& sequence : sequences) {
          int32_t at = f.in;
          for (size_t i = 0; i < sequence.size(); ++i) {
            const int32_t next = i + 1 == sequence.size() ? f.out : new_state();
            byte_edge(at, sequence[i].first, sequence[i].second, next);
            at = next;
          }
        }
        return f;
      }
      case GbnfExpr::Kind::rule_ref: {
        const auto found = index_.find(e.name);
        if (found == index_.end()) fail(e.offset, "undefined rule '" + e.name + "'");
        const Fragment f{new_state(), new_state()};
        state(f.in).calls.push_back({found->second, f.out});
        return f;
      }
      case GbnfExpr::Kind::sequence: {
        const int32_t in = new_state();
        int32_t at = in;
        for (const GbnfExpr& item : e.items) {
          const Fragment f = build(item);
          epsilon(at, f.in);
          at = f.out;
        }
        return {in, at};
      }
      case GbnfExpr::Kind::alternatives: {
        const Fragment f{new_state(), new_state()};
        for (const GbnfExpr& item : e.items) {
          const Fragment a = build(item);
          epsilon(f.in, a.in);
          epsilon(a.out, f.out);
        }
        return f;
      }
      case GbnfExpr::Kind::repeat: {
        const GbnfExpr& item = e.items[0];
        const int32_t in = new_state();
        int32_t at = in;
        for (int i = 0; i < e.min; ++i) {
          const Fragment f = build(item);
          epsilon(at, f.in);
          at = f.out;
        }
        const int32_t out = new_state();
        if (e.max < 0) {
          const Fragment f = build(item);
          epsilon(at, f.in);
          epsilon(f.out, at);
          epsilon(at, out);
          return {in, out};
        }
        epsilon(at, out);
        for (int i = e.min; i < e.max; ++i) {
          const Fragment f = build(item);
          epsilon(at, f.in);
          at = f.out;
          epsilon(at, out);
        }
        return {in, out};
      }
    }
    return {new_state(), new_state()};
  }

  const GbnfGrammar& grammar_;
  std::string_view text_;
  ByteGrammar& g_;
  std::unordered_map<std::string, int32_t> index_;
  const GbnfRule* rule_ = nullptr;
};

// Whether each rule's end is reachable from its start through epsilons, calls of rules already
// marked and (when `through_bytes`) byte edges: the rules that match "" (nullable) or anything
// at all (productive). A fixed point over the rules.
std::vector<bool> rules_reaching_end(const ByteGrammar& g, bool through_bytes) {
  const size_t rules = g.rule_start.size();
  std::vector<bool> marked(rules, false);
  std::vector<uint8_t> seen(g.states.size());
  std::vector<int32_t> work, touched;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rules; ++r) {
      if (marked[r]) continue;
      for (const int32_t t : touched) seen[static_cast<size_t>(t)] = 0;
      touched.assign(1, g.rule_start[r]);
      work.assign(1, g.rule_start[r]);
      seen[static_cast<size_t>(g.rule_start[r])] = 1;
      bool reached = false;
      while (!work.empty() && !reached) {
        const int32_t s = work.back();
        work.pop_back();
        const ByteGrammar::State& st = g.states[static_cast<size_t>(s)];
        reached = s == g.rule_end[r];
        auto visit = [&](int32_t t) {
          if (!seen[static_cast<size_t>(t)]) {
            seen[static_cast<size_t>(t)] = 1;
            touched.push_back(t);
            work.push_back(t);
          }
        };
        for (const int32_t t : st.epsilons) visit(t);
        for (const auto& call : st.calls)
          if (marked[static_cast<size_t>(call.rule)]) visit(call.ret);
        if (through_bytes)
          for (const auto& edge : st.bytes) visit(edge.target);
      }
      if (reached) {
        marked[r] = true;
        changed = true;
      }
    }
  }
  return marked;
}

// The rules each rule may call before consuming a byte.
std::vector<std::vector<int32_t>> left_calls(const ByteGrammar& g,
                                             const std::vector<bool>& nullable) {
  std::vector<std::vector<int32_t>> calls(g.rule_start.size());
  std::vector<uint8_t> seen(g.states.size());
  std::vector<int32_t> touched;
  for (size_t r = 0; r < g.rule_start.size(); ++r) {
    for (const int32_t t : touched) seen[static_cast<size_t>(t)] = 0;
    touched.clear();
    std::vector<int32_t> work{g.rule_start[r]};
    while (!work.empty()) {
      const int32_t s = work.back();
      work.pop_back();
      if (seen[static_cast<size_t>(s)]) continue;
      seen[static_cast<size_t>(s)] = 1;
      touched.push_back(s);
      const ByteGrammar::State& st = g.states[static_cast<size_t>(s)];
      for (const int32_t t : st.epsilons) work.push_back(t);
      for (const auto& call : st.calls) {
        calls[r].push_back(call.rule);
        if (nullable[static_cast<size_t>(call.rule)]) work.push_back(call.ret);
      }
    }
  }
  return calls;
}

// A rule on a cycle of left calls, or -1.
int32_t left_recursive_rule(const std::vector<std::vector<int32_t>>& calls) {
  enum : uint8_t { unvisited, active, done };
  std::vector<uint8_t> color(calls.size(), unvisited);
  for (size_t start = 0; start < calls.size(); ++start) {
    if (color[start] != unvisited) continue;
    // Iterative depth-first search: (rule, next call to follow).
    std::vector<std::pair<int32_t, size_t>> path{{static_cast<int32_t>(start), 0}};
    color[start] = active;
    while (!path.empty()) {
      auto& [rule, next] = path.back();
      const auto& out = calls[static_cast<size_t>(rule)];
      if (next == out.size()) {
        color[static_cast<size_t>(rule)] = done;
        path.pop_back();
        continue;
      }
      const int32_t callee = out[next++];
      if (color[static_cast<size_t>(callee)] == active) return callee;
      if (color[static_cast<size_t>(callee)] == unvisited) {
        color[static_cast<size_t>(callee)] = active;
        path.emplace_back(callee, 0);
      }
    }
  }
  return -1;
}

}  // namespace

ByteGrammar compile_grammar(const GbnfGrammar& grammar, std::string_view text,
                            std::string_view root_name) {
  ByteGrammar g;
  NfaBuilder(grammar, text, g).build();
  const GbnfRule* root = nullptr;
  for (size_t r = 0; r < grammar.rules.size(); ++r) {
    if (grammar.rules[r].name == root_name) {
      root = &grammar.rules[r];
      g.root = static_cast<int32_t>(r);
    }
  }
  if (root == nullptr)
    throw ConstraintError("grammar: no rule '" + std::string(root_name) + "' (the start rule)");
  const std::vector<bool> nullable = rules_reaching_end(g, false);
  const int32_t recursive = left_recursive_rule(left_calls(g, nullable));
  if (recursive >= 0) {
    const GbnfRule& rule = grammar.rules[static_cast<size_t>(recursive)];
    throw ConstraintError("grammar: " + text_position(text, rule.offset) + " (rule '" + rule.name +
                          "'): left recursion: the rule can reach itself before matching a "
                          "character");
  }
  if (!rules_reaching_end(g, true)[static_cast<size_t>(g.root)])
    throw ConstraintError("grammar: " + text_position(text, root->offset) + " (rule '" +
                          root->name + "'): the grammar matches no text at all");
  return g;
}

}  // namespace dq4::constrain
