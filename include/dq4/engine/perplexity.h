#pragma once
// Perplexity of a model over a token stream, in non-overlapping windows: each window is fed
// whole (after BOS when the model has one) and every next-token prediction inside it is scored.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "dq4/model/model.h"

namespace dq4 {

class ThreadPool;

struct PerplexityResult {
  int64_t windows = 0;
  int64_t scored_tokens = 0;
  double mean_nll = 0;        // nats per token
  double perplexity = 0;      // exp(mean_nll)
  double standard_error = 0;  // of the perplexity (delta method over the per-token NLLs)
  double seconds = 0;
};

// `tokens`: the text's ids without BOS; `bos`: prepended to every window (-1: none, then the
// window's first token is only context). Throws dq4::Error when a window cannot score anything.
PerplexityResult perplexity(Model& model, std::span<const int32_t> tokens, int64_t window,
                            int32_t bos, ThreadPool* pool = nullptr,
                            const std::function<void(int64_t done, int64_t total)>& progress = {});

}  // namespace dq4
