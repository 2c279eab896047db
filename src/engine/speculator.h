#pragma once
// The engine's side of speculative decoding: how many drafts each decoding sequence proposes this
// step (adapting to its acceptance and to the step's size), and the counters of what verification
// accepted. The verification itself (the rows drawn one by one until a draft is rejected) is in
// engine.cc's sampling.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "dq4/engine/speculation.h"
#include "draft_model.h"
#include "sequence.h"

namespace dq4::engine {

// One sequence's proposer and how well its drafts have done.
struct DraftState {
  std::unique_ptr<Proposer> proposer;      // null with a draft model
  std::unique_ptr<DraftKv> draft_kv;       // with a draft model: the sequence's cache in its pool
  std::unique_ptr<Sampler> draft_sampler;  // with a draft model: picks its drafts (null: argmax)
  DraftPacing pacing;
};

class Speculator {
 public:
  // `row_budget`: decode rows (plain and drafts) of a step beyond which drafts stop: past it a
  // step's cost grows with its rows (compute-bound), and drafts of low acceptance cost more than
  // they save.
  // `draft`: the draft model (method draft_model), null for the others.
  Speculator(const SpeculativeConfig& config, int64_t row_budget,
             std::unique_ptr<DraftModel> draft = nullptr);

  int64_t max_drafts() const { return config_.num_speculative_tokens; }
  bool rejection_sampling() const {
    return config_.acceptance == SpeculativeConfig::Acceptance::rejection_sampler;
  }
  // `sampling`: the choice's (a draft model samples its drafts as the choice samples, when that
  // is reproducible: greedy or seeded).
  std::unique_ptr<DraftState> make_state(const SamplingParams& sampling) const;

  // Drafts per decoding sequence this step, given how many sequences decode.
  int64_t drafts_per_sequence(int64_t decoding) const;
  // Fills seq.drafts with up to `limit` drafts (fewer while acceptance is low; none when paused).
  // A draft model's drafts come in finish_proposals(), for all sequences at once.
  void propose(Sequence& seq, DraftState& state, int64_t limit);
  void finish_proposals();
  // Verification accepted `accepted` of `drafted` drafts.
  void record(DraftState& state, int64_t drafted, int64_t accepted);

  const SpeculationStats& stats() const { return stats_; }

 private:
  SpeculativeConfig config_;
  int64_t row_budget_;
  SpeculationStats stats_;
  std::unique_ptr<DraftModel> draft_;
  // The draft model's jobs of this step's proposals, and their sequences.
  std::vector<DraftJob> jobs_;
  std::vector<Sequence*> job_seqs_;
};

}  // namespace dq4::engine
