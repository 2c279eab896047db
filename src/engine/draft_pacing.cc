// DraftPacing: fewer drafts while few are accepted.

#include <algorithm>
#include <limits>

#include "dq4/engine/speculation.h"

namespace dq4 {

namespace {

// Pauses after a failed single-draft probe double up to this many steps: a probe is a step of
// two rows instead of one, so spread over the pause its cost stays within about a percent of
// plain decoding, while text that turns predictable is found again within a few tokens.
constexpr int64_t kMaxPause = 8;

}  // namespace

int64_t DraftPacing::drafts(int64_t limit) {
  if (limit <= 0) return 0;
  if (pause_ > 0) {
    --pause_;
    return 0;
  }
  return std::min(allowance_, limit);
}

void DraftPacing::record(int64_t drafted, int64_t accepted) {
  if (drafted == 0) return;
  // Halved after a step that accepted nothing, doubled after one that accepted something: on
  // text where nothing is accepted, a few steps reach single drafts and then pauses, so the rows
  // for nothing cost a few steps in all rather than k per token.
  if (accepted > 0) {
    allowance_ = drafted > std::numeric_limits<int64_t>::max() / 2 ? drafted : 2 * drafted;
    backoff_ = 1;
    return;
  }
  allowance_ = std::max<int64_t>(drafted / 2, 1);
  if (drafted == 1) {
    pause_ = backoff_;
    backoff_ = std::min(backoff_ * 2, kMaxPause);
  }
}

}  // namespace dq4
