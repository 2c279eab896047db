#pragma once
// A constraint's token mask (one bit per token, as constrain::Matcher::fill_mask writes it)
// applied to a row of logits before sampling.

#include <cstdint>
#include <span>

#include "dq4/tokenizer/tokenizer.h"

namespace dq4::engine {

// Sets the logit of every token whose bit is clear to -infinity; returns how many tokens stay
// allowed. `allowed` holds at least (logits.size() + 63) / 64 words.
int64_t mask_logits(std::span<const uint64_t> allowed, std::span<float> logits);

// Forbids `ids` too (min_tokens' EOS and stop ids), unless that would leave no token allowed:
// then the constraint, which can only end here, wins. `allowed` (the mask mask_logits applied,
// whose `count` tokens it left) loses the bits of `ids`.
void forbid_unless_last(std::span<uint64_t> allowed, int64_t count, std::span<const TokenId> ids,
                        std::span<float> logits);

}  // namespace dq4::engine
