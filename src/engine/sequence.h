#pragma once
// One choice of a request as the scheduler sees it: its tokens (prompt, then what it generated),
// how many of them are in the KV cache, and its blocks.

#include <cstdint>
#include <vector>

#include "block_manager.h"
#include "dq4/tokenizer/tokenizer.h"

namespace dq4::engine {

struct Sequence {
  uint64_t request_id = 0;
  int choice = 0;  // index among the request's n choices
  std::vector<TokenId> tokens;
  int64_t prompt_len = 0;
  // Positions [0, num_computed) have their keys and values in the cache. After a preemption this
  // falls back to 0 (or to a prefix cache hit) and the tokens are computed again.
  int64_t num_computed = 0;
  BlockTable blocks;
  enum class State { waiting, running, finished } state = State::waiting;
  // Its cache holds keys rotated with longrope's long factors (it is longer than the switch).
  bool long_rope = false;
  bool scheduled_before = false;    // for the queue-time metric and the cached-prompt count
  int64_t first_cached_tokens = 0;  // prefix cache hit when first admitted

  // Speculation: the drafts proposed for the next step, and how many of them the scheduled step
  // appended to `tokens` (verification removes them again, keeping the accepted ones).
  std::vector<TokenId> drafts;
  int64_t drafted = 0;

  // Tokens still to run through the model; the last of them gives the logits of the next token.
  int64_t pending() const { return static_cast<int64_t>(tokens.size()) - num_computed - drafted; }
};

}  // namespace dq4::engine
