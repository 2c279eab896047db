#include "speculator.h"

#include <algorithm>

namespace dq4::engine {

Speculator::Speculator(const SpeculativeConfig& config, int64_t row_budget,
                       std::unique_ptr<DraftModel> draft)
    : config_(config), row_budget_(row_budget), draft_(std::move(draft)) {
  config_.validate();
  stats_.accepted_per_position.assign(static_cast<size_t>(config_.num_speculative_tokens), 0);
}

std::unique_ptr<DraftState> Speculator::make_state(const SamplingParams& sampling) const {
  auto state = std::make_unique<DraftState>();
  if (draft_) {
    state->draft_kv = std::make_unique<DraftKv>(*draft_);
    if (sampling.temperature == 0 || sampling.seed)
      state->draft_sampler = std::make_unique<Sampler>(sampling);
  } else {
    state->proposer = make_proposer(config_);
  }
  return state;
}

int64_t Speculator::drafts_per_sequence(int64_t decoding) const {
  if (decoding <= 0) return 0;
  return std::clamp<int64_t>((row_budget_ - decoding) / decoding, 0,
                             config_.num_speculative_tokens);
}

void Speculator::propose(Sequence& seq, DraftState& state, int64_t limit) {
  seq.drafts.clear();
  // Preempted (or finished): its blocks in the draft's pool go back, and its state there is
  // rebuilt (from the prefix cache, else recomputed) when it decodes again.
  if (state.draft_kv && seq.state != Sequence::State::running) state.draft_kv->release();
  const int64_t count = state.pacing.drafts(limit);
  if (count == 0) return;
  seq.drafts.resize(static_cast<size_t>(count));
  if (state.draft_kv) {
    jobs_.push_back(
        {seq.tokens, state.draft_kv.get(), seq.drafts, state.draft_sampler.get(), seq.prompt_len});
    job_seqs_.push_back(&seq);
    return;
  }
  const int64_t n = state.proposer->propose(seq.tokens, seq.drafts);
  seq.drafts.resize(static_cast<size_t>(n));
}

void Speculator::finish_proposals() {
  if (jobs_.empty()) return;
  draft_->propose(jobs_);
  for (size_t i = 0; i < jobs_.size(); ++i)
    job_seqs_[i]->drafts.resize(static_cast<size_t>(jobs_[i].count));
  jobs_.clear();
  job_seqs_.clear();
}

void Speculator::record(DraftState& state, int64_t drafted, int64_t accepted) {
  if (drafted == 0) return;
  ++stats_.drafts;
  stats_.draft_tokens += static_cast<uint64_t>(drafted);
  stats_.accepted_tokens += static_cast<uint64_t>(accepted);
  for (int64_t i = 0; i < accepted && i < static_cast<int64_t>(stats_.accepted_per_position.size());
       ++i)
    ++stats_.accepted_per_position[static_cast<size_t>(i)];
  state.pacing.record(drafted, accepted);
}

}  // namespace dq4::engine
