#pragma once
// The engine's side of speculative decoding: how many drafts each decoding sequence proposes this
// step (adapting to its acceptance and to the step's size), and the counters of what verification
// accepted. The verification itself (the rows drawn one by one until a draft is rejected) is in
// engine.cc's sampling.

#include <cstdint>
#include <memory>
#include <span>

#include "dq4/engine/speculation.h"
#include "sequence.h"

namespace dq4::engine {

// One sequence's proposer and how well its drafts have done.
struct DraftState {
  std::unique_ptr<Proposer> proposer;
  DraftPacing pacing;
};

class Speculator {
 public:
  // `row_budget`: decode rows (plain and drafts) of a step beyond which drafts stop: past it a
  // step's cost grows with its rows (compute-bound), and drafts of low acceptance cost more than
  // they save.
  Speculator(const SpeculativeConfig& config, int64_t row_budget);

  int64_t max_drafts() const { return config_.num_speculative_tokens; }
  bool rejection_sampling() const {
    return config_.acceptance == SpeculativeConfig::Acceptance::rejection_sampler;
  }
  std::unique_ptr<DraftState> make_state() const;

  // Drafts per decoding sequence this step, given how many sequences decode.
  int64_t drafts_per_sequence(int64_t decoding) const;
  // Fills seq.drafts with up to `limit` drafts (fewer while acceptance is low; none when paused).
  void propose(Sequence& seq, DraftState& state, int64_t limit) const;
  // Verification accepted `accepted` of `drafted` drafts.
  void record(DraftState& state, int64_t drafted, int64_t accepted);

  const SpeculationStats& stats() const { return stats_; }

 private:
  SpeculativeConfig config_;
  int64_t row_budget_;
  SpeculationStats stats_;
};

}  // namespace dq4::engine
