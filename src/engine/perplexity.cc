// Perplexity over non-overlapping windows.

#include "dq4/engine/perplexity.h"

#include <chrono>
#include <cmath>

#include "dq4/engine/sampler.h"
#include "dq4/engine/session.h"
#include "dq4/kernels/error.h"

namespace dq4 {

PerplexityResult perplexity(Model& model, std::span<const int32_t> tokens, int64_t window,
                            int32_t bos, ThreadPool* pool,
                            const std::function<void(int64_t, int64_t)>& progress) {
  const int64_t text_per_window = bos >= 0 ? window - 1 : window;
  if (window < 2) throw Error("perplexity: the window (--ctx) must be at least 2 tokens");
  const int64_t total = static_cast<int64_t>(tokens.size()) / text_per_window;
  if (total == 0)
    throw Error("perplexity: the text has " + std::to_string(tokens.size()) +
                " tokens, fewer than one window of " + std::to_string(text_per_window));
  const auto start = std::chrono::steady_clock::now();
  const int64_t vocab = model.vocab_size();
  double sum = 0, sum_sq = 0;
  int64_t scored = 0;
  std::vector<int32_t> input;
  for (int64_t w = 0; w < total; ++w) {
    const auto text = tokens.subspan(static_cast<size_t>(w * text_per_window),
                                     static_cast<size_t>(text_per_window));
    input.clear();
    if (bos >= 0) input.push_back(bos);
    input.insert(input.end(), text.begin(), text.end());
    Session session(model, static_cast<int64_t>(input.size()), attention::KvType::f32, 512, pool);
    const std::span<const float> logits = session.feed_all(input);
    for (size_t i = 0; i + 1 < input.size(); ++i) {
      const double nll = -token_logprob(
          logits.subspan(i * static_cast<size_t>(vocab), static_cast<size_t>(vocab)), input[i + 1]);
      sum += nll;
      sum_sq += nll * nll;
      ++scored;
    }
    if (progress) progress(w + 1, total);
  }
  PerplexityResult r;
  r.windows = total;
  r.scored_tokens = scored;
  r.mean_nll = sum / static_cast<double>(scored);
  r.perplexity = std::exp(r.mean_nll);
  const double variance =
      std::max(0.0, sum_sq / static_cast<double>(scored) - r.mean_nll * r.mean_nll);
  r.standard_error = r.perplexity * std::sqrt(variance / static_cast<double>(scored));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace dq4
