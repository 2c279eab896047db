// The proposers: prompt lookup (n-gram) and replay.

#include <algorithm>
#include <cmath>

#include "dq4/engine/speculation.h"
#include "dq4/kernels/error.h"

namespace dq4 {

namespace {

class NgramProposer : public Proposer {
 public:
  explicit NgramProposer(const SpeculativeConfig& c)
      : min_(c.prompt_lookup_min), max_(c.prompt_lookup_max) {}

  int64_t propose(std::span<const TokenId> tokens, std::span<TokenId> out) override {
    const auto len = static_cast<int64_t>(tokens.size());
    // The longest suffix first; its most recent earlier occurrence (recent text predicts best).
    for (int64_t n = std::min(max_, len - 1); n >= min_; --n) {
      const auto suffix = tokens.subspan(static_cast<size_t>(len - n));
      for (int64_t at = len - n - 1; at >= 0; --at) {
        if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + at)) continue;
        const int64_t from = at + n;
        const int64_t count = std::min<int64_t>(static_cast<int64_t>(out.size()), len - from);
        std::copy_n(tokens.begin() + from, count, out.begin());
        return count;
      }
    }
    return 0;
  }

 private:
  int64_t min_, max_;
};

class ReplayProposer : public Proposer {
 public:
  explicit ReplayProposer(const SpeculativeConfig& c)
      : accept_(c.replay_accept), ref_(c.replay_tokens) {}

  int64_t propose(std::span<const TokenId> tokens, std::span<TokenId> out) override {
    if (!ref_) return 0;
    const auto& ref = *ref_;
    const size_t len = tokens.size();
    if (len >= ref.size() || out.empty()) return 0;
    const auto count = static_cast<int64_t>(std::min(out.size(), ref.size() - len));
    std::copy_n(ref.begin() + static_cast<ptrdiff_t>(len), count, out.begin());
    // Correct up to the share `accept` of all drafts so far, then one wrong draft.
    drafted_ += count;
    const auto target =
        static_cast<int64_t>(std::floor(accept_ * static_cast<double>(drafted_) + 1e-9));
    const int64_t correct = std::clamp<int64_t>(target - correct_, 0, count);
    correct_ += correct;
    if (correct < count) out[correct] = out[correct] == 0 ? 1 : out[correct] - 1;
    return count;
  }

 private:
  double accept_;
  std::shared_ptr<const std::vector<TokenId>> ref_;
  int64_t drafted_ = 0, correct_ = 0;
};

}  // namespace

std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config) {
  if (config.method == SpeculativeConfig::Method::draft_model)
    throw Error("speculate: a draft model's proposer needs the model (make_draft_model_proposer)");
  if (config.method == SpeculativeConfig::Method::replay)
    return std::make_unique<ReplayProposer>(config);
  return std::make_unique<NgramProposer>(config);
}

}  // namespace dq4
