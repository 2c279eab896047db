#pragma once
// Speculative decoding: a proposer guesses the next few tokens of a sequence (drafts), the target
// model runs the sequence's last token and its drafts as rows of one step, and the drafts are
// kept while each equals the token the sampler picks from the row before it (the argmax, or the
// seeded draw of that output position). What comes out is what plain decoding gives, token for
// token; the drafts only decide how many tokens one step commits.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dq4/tokenizer/tokenizer.h"

namespace dq4 {

struct SpeculativeConfig {
  enum class Method {
    // vLLM's prompt lookup: the longest suffix of the sequence (prompt_lookup_min to
    // prompt_lookup_max tokens) found earlier in it proposes the tokens that followed it there.
    ngram,
    // For benchmarks and tests: proposes `replay_tokens` (a whole sequence, prompt first: what a
    // plain run produced) past the sequence's length, correct for `replay_accept` of the drafts
    // over time and wrong at the first draft after them.
    replay,
  };
  Method method = Method::ngram;
  int64_t num_speculative_tokens = 0;  // drafts per step at most (0: no speculation)
  int64_t prompt_lookup_min = 5;
  int64_t prompt_lookup_max = 5;
  double replay_accept = 1.0;
  std::shared_ptr<const std::vector<TokenId>> replay_tokens;

  // Throws dq4::Error naming the field for a value out of range.
  void validate() const;
  // "ngram" or "replay:k=4,accept=0.6": how benchmarks name the case.
  std::string name() const;
};

// vLLM's --speculative-config JSON: {"method": "ngram", "num_speculative_tokens": 4,
// "prompt_lookup_max": 4, "prompt_lookup_min": 2} (either bound alone sets both, neither: 5).
// Throws dq4::Error naming the field at fault.
SpeculativeConfig parse_speculative_config(const std::string& json);
// "ngram[:k=K,min=N,max=M]" or "replay:k=K,accept=A" (replay_tokens left for the caller).
SpeculativeConfig parse_speculate_spec(const std::string& spec);

// One sequence's proposer (it may keep state across the sequence's steps).
class Proposer {
 public:
  virtual ~Proposer() = default;
  // Writes up to out.size() drafts to follow `tokens` (prompt, then what was generated); returns
  // how many. Allocates nothing.
  virtual int64_t propose(std::span<const TokenId> tokens, std::span<TokenId> out) = 0;
};

std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config);

// Speculation's counters (EngineStats): vLLM's spec_decode metrics.
struct SpeculationStats {
  uint64_t drafts = 0;           // verification steps of a sequence with at least one draft
  uint64_t draft_tokens = 0;     // drafts verified
  uint64_t accepted_tokens = 0;  // of which accepted
  // accepted_per_position[i]: drafts accepted at position i of their step (num_speculative_tokens
  // entries).
  std::vector<uint64_t> accepted_per_position;
};

}  // namespace dq4
