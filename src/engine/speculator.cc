#include "speculator.h"

#include <algorithm>

namespace dq4::engine {

Speculator::Speculator(const SpeculativeConfig& config, int64_t row_budget)
    : config_(config), row_budget_(row_budget) {
  config_.validate();
  stats_.accepted_per_position.assign(static_cast<size_t>(config_.num_speculative_tokens), 0);
}

std::unique_ptr<DraftState> Speculator::make_state() const {
  auto state = std::make_unique<DraftState>();
  state->proposer = make_proposer(config_);
  return state;
}

int64_t Speculator::drafts_per_sequence(int64_t decoding) const {
  if (decoding <= 0) return 0;
  return std::clamp<int64_t>((row_budget_ - decoding) / decoding, 0,
                             config_.num_speculative_tokens);
}

void Speculator::propose(Sequence& seq, DraftState& state, int64_t limit) const {
  seq.drafts.clear();
  const int64_t count = state.pacing.drafts(limit);
  if (count == 0) return;
  seq.drafts.resize(static_cast<size_t>(count));
  const int64_t n = state.proposer->propose(seq.tokens, seq.drafts);
  seq.drafts.resize(static_cast<size_t>(n));
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
