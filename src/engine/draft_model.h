#pragma once
// The draft model of speculative decoding inside an engine: a smaller model with the target's
// tokenizer, its own paged KV pool and block manager (prefix caching included), and one forward
// per draft position over every sequence that drafts. A sequence's drafts are what its own
// sampler picks from the draft's logits: the argmax when greedy, and with a seed the draw of the
// same (seed, position) the target's verification makes, which two close distributions turn into
// the same token most of the time (without a seed: the argmax).
//
// A sequence's state in the draft's cache rolls back by itself: the next proposal keeps the
// positions whose tokens are still the ones the draft ran (the accepted drafts), recomputes from
// the first that differs, and writes over the rejected drafts' slots in the blocks it holds.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "block_manager.h"
#include "dq4/engine/engine.h"
#include "dq4/engine/sampler.h"
#include "dq4/model/kv_cache.h"
#include "dq4/model/model.h"

namespace dq4 {
class ThreadPool;
}

namespace dq4::engine {

class DraftModel;

// One sequence's part of the draft's cache; gives its blocks back when destroyed.
class DraftKv {
 public:
  explicit DraftKv(DraftModel& owner) : owner_(&owner) {}
  ~DraftKv();
  DraftKv(const DraftKv&) = delete;
  DraftKv& operator=(const DraftKv&) = delete;

  // Gives the blocks back (they stay in the draft's prefix cache until evicted); the next
  // proposal rebuilds the state from the sequence's tokens.
  void release();

 private:
  friend class DraftModel;
  DraftModel* owner_;
  BlockTable blocks_;
  // Positions [0, computed_) hold the keys and values of the sequence's tokens; past them, the
  // draft wrote its own drafts (`written_`, which the sequence may since have taken).
  int64_t computed_ = 0;
  bool long_rope_ = false;  // its keys are rotated with longrope's long factors
  std::vector<TokenId> written_;
  std::vector<TokenId> generated_;  // a proposal's generated tokens and drafts, for the sampler
};

// What one sequence asks of a proposal.
struct DraftJob {
  std::span<const TokenId> tokens;  // the sequence's tokens (prompt, then generated)
  DraftKv* kv = nullptr;
  std::span<TokenId> out;  // up to out.size() drafts
  // Picks each draft from the draft's logits (null: the argmax); `prompt_len` of the tokens are
  // the prompt, the rest generated (the sampler's penalties and positions).
  Sampler* sampler = nullptr;
  int64_t prompt_len = 0;
  int64_t count = 0;  // drafts written to out
  // propose()'s working state.
  int64_t start = 0;  // the next position to run
};

class DraftModel {
 public:
  // A pool of `blocks` blocks of `block_size` tokens. `target_vocab`: ids the target's logits
  // cover (the draft's may have more; it never proposes those). `chunk`: tokens of one forward at
  // most while a sequence's cache catches up with its tokens.
  DraftModel(Model& model, int64_t target_vocab, int64_t blocks, int64_t block_size,
             attention::KvType kv_type, bool prefix_caching, int64_t chunk, ThreadPool* pool);

  // Maps the pool's pages now (EngineOptions::prefault_kv_cache).
  void prefault(ThreadPool& pool) { cache_.prefault(pool); }

  // Fills every job's drafts: first the tokens each sequence's cache lacks (in chunks), whose last
  // row gives the first draft, then one forward per further draft over the jobs that want it. A
  // job whose blocks the pool cannot hold gets no drafts.
  void propose(std::span<DraftJob> jobs);

 private:
  friend class DraftKv;
  // Keeps the positions of the job's cache that still hold its tokens, takes the prefix cache's
  // blocks into an empty table, and allocates what the drafts need; false when the pool is short.
  bool prepare(DraftJob& job);
  void forward();  // runs batch_, each row's pick into picks_

  Model& model_;
  ThreadPool* pool_;
  int64_t vocab_, chunk_;
  KvCache cache_;
  BlockManager blocks_;
  // A proposal's buffers, kept across proposals.
  std::vector<SequenceInput> batch_;
  std::vector<DraftJob*> rows_;  // batch_[i]'s job
  std::vector<float> logits_;
  std::vector<TokenId> picks_;
};

// The engine's draft model for `config` (null unless its method is draft_model): a pool of as many
// blocks as the target's (each smaller), prefix caching as the target's, on the target's threads.
// Throws dq4::Error when the config's draft model is not loaded.
std::unique_ptr<DraftModel> make_engine_draft(const SpeculativeConfig& config, int64_t target_vocab,
                                              const EngineOptions& options, ThreadPool* pool);

}  // namespace dq4::engine
