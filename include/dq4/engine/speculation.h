#pragma once
// Speculative decoding: a proposer guesses the next few tokens of a sequence (drafts), the target
// model runs the sequence's last token and its drafts as rows of one step, and verification
// decides how many drafts stand. By default (acceptance "match") a draft stands while it equals
// the token the sampler picks from the row before it (the argmax, or the seeded draw of that
// output position): what comes out is what plain decoding gives, token for token, and the drafts
// only decide how many tokens one step commits. The rejection sampler (vLLM's default) accepts
// more drafts when sampling, with the same distribution but not the same tokens.

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dq4/model/model.h"
#include "dq4/tokenizer/tokenizer.h"

namespace dq4 {

class ThreadPool;

struct SpeculativeConfig {
  enum class Method {
    // vLLM's prompt lookup: the longest suffix of the sequence (prompt_lookup_min to
    // prompt_lookup_max tokens) found earlier in it proposes the tokens that followed it there.
    ngram,
    // For benchmarks and tests: proposes `replay_tokens` (a whole sequence, prompt first: what a
    // plain run produced) past the sequence's length, correct for `replay_accept` of the drafts
    // over time and wrong at the first draft after them.
    replay,
    // A smaller model with the target's tokenizer proposes its greedy continuation, for all
    // sequences of a step in one forward per draft position, over its own paged KV cache.
    draft_model,
  };
  Method method = Method::ngram;
  // How verification decides that a draft stands (vLLM's acceptance_method).
  enum class Acceptance {
    // The draft equals the token the sampler picks at its position: outputs identical to plain
    // decoding (greedy, or sampling with a seed).
    match,
    // Leviathan et al.'s rejection sampling (Sampler::verify_at): accepted with probability
    // min(1, p / q), else a token from the residual; the target's distribution, other tokens.
    // The same as match under greedy decoding.
    rejection_sampler,
  };
  Acceptance acceptance = Acceptance::match;
  int64_t num_speculative_tokens = 0;  // drafts per step at most (0: no speculation)
  int64_t prompt_lookup_min = 5;
  int64_t prompt_lookup_max = 5;
  double replay_accept = 1.0;
  std::shared_ptr<const std::vector<TokenId>> replay_tokens;
  // draft_model: the draft's directory (what parsing gives), and the model loaded from it, which
  // the engine runs on its own threads (load_draft_model checks it against the target).
  std::string model;
  std::shared_ptr<Model> draft;

  // Throws dq4::Error naming the field for a value out of range.
  void validate() const;
  // "ngram:k=4,min=2,max=4", "replay:k=4,accept=0.6" or "draft:DIR,k=4"
  // (",acceptance=rejection_sampler" after any when not matching): how benchmarks name the case.
  std::string name() const;
};

// vLLM's --speculative-config JSON: {"method": "ngram", "num_speculative_tokens": 4,
// "prompt_lookup_max": 4, "prompt_lookup_min": 2} (either bound alone sets both, neither: 5), or
// {"model": DIR, "num_speculative_tokens": 4} (method "draft_model" or none); optionally
// "acceptance_method": "match" (the default) or "rejection_sampler". Throws dq4::Error naming the
// field at fault.
SpeculativeConfig parse_speculative_config(const std::string& json);
// "ngram[:k=K,min=N,max=M]", "replay:k=K,accept=A", "draft:DIR[,k=K]" or a model directory alone
// (replay_tokens and the draft model left for the caller), any with ",acceptance=rejection_sampler"
// (or match).
SpeculativeConfig parse_speculate_spec(const std::string& spec);

// Loads config.model into config.draft (on `pool`'s threads) after checking that its tokenizer
// is the target's, and that its vocabulary holds the target's `target_vocab` ids: throws
// dq4::Error naming the draft's directory and what differs.
void load_draft_model(SpeculativeConfig& config, const Tokenizer& target_tokenizer,
                      int64_t target_vocab, const ModelOptions& options = {},
                      ThreadPool* pool = nullptr);
// Throws dq4::Error naming `draft_dir` and the first thing in which the two tokenizers differ.
void check_same_tokenizer(const Tokenizer& target, const Tokenizer& draft,
                          const std::string& draft_dir);

// One sequence's proposer (it may keep state across the sequence's steps).
class Proposer {
 public:
  virtual ~Proposer() = default;
  // Writes up to out.size() drafts to follow `tokens` (prompt, then what was generated); returns
  // how many. Allocates nothing.
  virtual int64_t propose(std::span<const TokenId> tokens, std::span<TokenId> out) = 0;
  // The distributions the last propose()'s drafts were drawn from, for the rejection sampler: a
  // vocabulary's probabilities per draft, in the drafts' order (verification reads the first
  // rows, as many as it verifies). Empty for a proposer without one (n-gram, replay): each draft
  // is then a point mass, q = 1 for the drafted token.
  virtual std::span<const float> draft_probs() const { return {}; }
};

// ngram and replay; draft_model needs make_draft_model_proposer.
std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config);
// A draft model's proposer for one sequence of up to `max_len` tokens, outside an engine (the
// benchmarks'): the engine's batched drafting over a pool of its own.
std::unique_ptr<Proposer> make_draft_model_proposer(Model& draft, int64_t target_vocab,
                                                    int64_t max_len, ThreadPool* pool = nullptr);

// How many drafts a sequence proposes, from how well its drafts have done: every rejected draft
// is a row of work for nothing, so on text where nothing is accepted a sequence must cost about
// what plain decoding costs. The engine paces each sequence with one; `dq4 bench model` too.
class DraftPacing {
 public:
  // Drafts to propose this step, at most `limit` (none while paused).
  int64_t drafts(int64_t limit);
  // Verification accepted `accepted` of `drafted` drafts (nothing to record when none).
  void record(int64_t drafted, int64_t accepted);

 private:
  int64_t allowance_ = std::numeric_limits<int64_t>::max();  // drafts of the next step at most
  int64_t pause_ = 0;                                        // steps left without drafts
  int64_t backoff_ = 1;                                      // the next pause's length
};

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
