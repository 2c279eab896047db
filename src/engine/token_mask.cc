#include "token_mask.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace dq4::engine {

namespace {

constexpr float kNever = -std::numeric_limits<float>::infinity();

}  // namespace

int64_t mask_logits(std::span<const uint64_t> allowed, std::span<float> logits) {
  int64_t count = 0;
  const size_t n = logits.size();
  for (size_t base = 0; base < n; base += 64) {
    const size_t len = std::min<size_t>(64, n - base);
    uint64_t bits = allowed[base / 64];
    if (len < 64) bits &= (uint64_t{1} << len) - 1;
    count += std::popcount(bits);
    if (bits == ~uint64_t{0}) continue;
    float* row = logits.data() + base;
    // Branch-free, so that the compiler vectorizes it: most tokens are forbidden in most states.
    for (size_t j = 0; j < len; ++j) row[j] = (bits >> j) & 1 ? row[j] : kNever;
  }
  return count;
}

void forbid_unless_last(std::span<uint64_t> allowed, int64_t count, std::span<const TokenId> ids,
                        std::span<float> logits) {
  // Clearing each allowed id's bit counts it once, however often it is listed.
  int64_t forbidden = 0;
  for (TokenId id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= logits.size()) continue;
    uint64_t& word = allowed[static_cast<size_t>(id) / 64];
    const uint64_t bit = uint64_t{1} << (id % 64);
    if (word & bit) {
      word &= ~bit;
      ++forbidden;
    }
  }
  if (forbidden == count) return;
  for (TokenId id : ids)
    if (id >= 0 && static_cast<size_t>(id) < logits.size())
      logits[static_cast<size_t>(id)] = kNever;
}

}  // namespace dq4::engine
