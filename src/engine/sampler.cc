// Sampler: penalties, temperature, top-k / top-p / min-p truncation and a seeded draw.

#include "dq4/engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <random>

#include "dq4/kernels/error.h"
#include "dq4/layers/ops.h"

namespace dq4 {
namespace {

uint64_t mix64(uint64_t z) {  // splitmix64's finalizer: a bijection that scatters every bit
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The largest logit (NaNs never win; -infinity when every logit is NaN), in 16 independent lanes:
// one running maximum compared element by element is a chain of dependent compares (slow for a
// large vocabulary, per row, while the worker threads wait).
float max_logit(std::span<const float> logits) {
  constexpr size_t kLanes = 16;
  float lane_max[kLanes];
  std::fill(std::begin(lane_max), std::end(lane_max), -std::numeric_limits<float>::infinity());
  size_t i = 0;
  for (; i + kLanes <= logits.size(); i += kLanes)
    for (size_t j = 0; j < kLanes; ++j)
      lane_max[j] = logits[i + j] > lane_max[j] ? logits[i + j] : lane_max[j];
  for (; i < logits.size(); ++i) lane_max[0] = logits[i] > lane_max[0] ? logits[i] : lane_max[0];
  return *std::max_element(std::begin(lane_max), std::end(lane_max));
}

// The first index of the largest logit (0 when every logit is NaN).
int32_t argmax(std::span<const float> logits) {
  const float max = max_logit(logits);
  for (size_t k = 0; k < logits.size(); ++k)
    if (logits[k] == max) return static_cast<int32_t>(k);
  return 0;
}

// The sum of the weights >= floor, in four independent partial sums (one chain of dependent
// double adds over a 128K vocabulary costs more than the exponentials).
double sum_at_least(const std::vector<float>& weights, float floor) {
  double part[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 <= weights.size(); i += 4)
    for (size_t j = 0; j < 4; ++j) part[j] += weights[i + j] >= floor ? weights[i + j] : 0.0f;
  for (; i < weights.size(); ++i) part[0] += weights[i] >= floor ? weights[i] : 0.0f;
  return (part[0] + part[1]) + (part[2] + part[3]);
}

}  // namespace

void SamplingParams::validate() const {
  if (!(temperature >= 0) || !std::isfinite(temperature))
    throw Error("temperature: must be a finite number >= 0, got " + std::to_string(temperature));
  if (!(top_p > 0 && top_p <= 1))
    throw Error("top_p: must be in (0, 1], got " + std::to_string(top_p));
  if (!(min_p >= 0 && min_p <= 1))
    throw Error("min_p: must be in [0, 1], got " + std::to_string(min_p));
  if (!(repetition_penalty > 0) || !std::isfinite(repetition_penalty))
    throw Error("repetition_penalty: must be positive, got " + std::to_string(repetition_penalty));
  if (!(presence_penalty >= -2 && presence_penalty <= 2))
    throw Error("presence_penalty: must be in [-2, 2], got " + std::to_string(presence_penalty));
  if (!(frequency_penalty >= -2 && frequency_penalty <= 2))
    throw Error("frequency_penalty: must be in [-2, 2], got " + std::to_string(frequency_penalty));
}

Sampler::Sampler(const SamplingParams& params) : params_(params) {
  params_.validate();
  const uint64_t seed = params.seed ? *params.seed : std::random_device{}();
  seed_ = mix64(seed + 0x9E3779B97F4A7C15ull);
}

double Sampler::uniform(uint64_t position, uint64_t stream) const {
  // A counter-based generator: two rounds of mixing of the seed's hash and the position (seeds
  // s and s + 1, which a request's choices get, stay unrelated at every position). The top 53
  // bits as a double in [0, 1).
  const uint64_t result = mix64(mix64(seed_ ^ (position * 0xD1B54A32D192ED03ull)) + seed_ +
                                stream * 0x9E3779B97F4A7C15ull);
  return static_cast<double>(result >> 11) * 0x1.0p-53;
}

int32_t Sampler::prepare(std::span<float> logits, std::span<const int32_t> prompt,
                         std::span<const int32_t> generated) {
  const auto in_vocab = [&](int32_t t) { return t >= 0 && static_cast<size_t>(t) < logits.size(); };
  // Penalties count tokens in counts_ (all zero between calls: each use clears what it set).
  const bool repetition = params_.repetition_penalty != 1.0f;
  const bool occurrence = params_.presence_penalty != 0 || params_.frequency_penalty != 0;
  if ((repetition || occurrence) && counts_.size() != logits.size())
    counts_.assign(logits.size(), 0);
  if (repetition) {
    for (auto ids : {prompt, generated})
      for (int32_t t : ids)
        if (in_vocab(t) && counts_[static_cast<size_t>(t)] == 0) {
          counts_[static_cast<size_t>(t)] = 1;
          float& v = logits[static_cast<size_t>(t)];
          v = v > 0 ? v / params_.repetition_penalty : v * params_.repetition_penalty;
        }
    for (auto ids : {prompt, generated})
      for (int32_t t : ids)
        if (in_vocab(t)) counts_[static_cast<size_t>(t)] = 0;
  }
  if (occurrence) {
    for (int32_t t : generated)
      if (in_vocab(t)) ++counts_[static_cast<size_t>(t)];
    for (int32_t t : generated) {
      if (!in_vocab(t) || counts_[static_cast<size_t>(t)] == 0) continue;
      logits[static_cast<size_t>(t)] -=
          params_.presence_penalty +
          params_.frequency_penalty * static_cast<float>(counts_[static_cast<size_t>(t)]);
      counts_[static_cast<size_t>(t)] = 0;
    }
  }
  if (params_.temperature == 0) return argmax(logits);

  // Weights exp((logit - max) / T) of every token (the maximum's is exactly 1), vectorized:
  // computing and sorting every token's probability one by one is slow for a large vocabulary.
  const size_t vocab = logits.size();
  const float inv_t = 1.0f / params_.temperature;
  const float max = max_logit(logits);
  if (weights_.size() != vocab) {
    weights_.resize(vocab);
    order_.reserve(vocab);  // never grown later, in a step
  }
  ops::exp_scaled(logits.data(), static_cast<int64_t>(vocab), max, inv_t, weights_.data());
  for (float& w : weights_) w = w >= 0 ? w : 0.0f;  // a NaN logit never wins

  const auto higher = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  // order_ = the tokens whose logit is within `spread` / (1 / T) of the maximum (all for an
  // infinite spread) and that have a weight, unordered. Truncation needs the order only near the
  // top: spreads of 11, 22, 44, 88 (weights down to e^-88, below which they are 0) before every
  // token.
  const auto collect_within = [&](float spread) {
    const float lowest = max - spread / inv_t;
    order_.clear();
    for (size_t i = 0; i < vocab; ++i)
      if (weights_[i] > 0 && !(logits[i] < lowest)) order_.push_back(static_cast<int32_t>(i));
  };
  // Collects the tokens within ever wider spreads until `enough()` (or every token is in).
  const auto collect_until = [&](auto enough) {
    for (float spread = 11.0f; spread <= 88.0f; spread *= 2) {
      collect_within(spread);
      if (enough()) return;
    }
    collect_within(std::numeric_limits<float>::infinity());
  };
  // Moves the `n` highest of order_ to its front in descending order of logit (ties: lower id
  // first), after the `sorted` already there. A flat distribution (a random model, a high
  // temperature) has most of the vocabulary within the first spread: sorting all of it would
  // cost a visible share of decode time.
  size_t sorted = 0;
  const auto sort_first = [&](size_t n) {
    n = std::min(n, order_.size());
    if (n <= sorted) return;
    const auto first = order_.begin() + static_cast<ptrdiff_t>(sorted);
    const auto middle = order_.begin() + static_cast<ptrdiff_t>(n);
    std::nth_element(first, middle - 1, order_.end(), higher);
    std::sort(first, middle - 1, higher);
    sorted = n;
  };
  double total = 0;  // the mass top-p is relative to: every token, or top-k's
  bool ranked = false;
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < vocab) {
    const size_t k = static_cast<size_t>(params_.top_k);
    // The k highest lie among the tokens within a spread once there are k of them.
    collect_until([&] { return order_.size() >= k; });
    sort_first(k);
    order_.resize(sorted);
    for (int32_t t : order_) total += weights_[static_cast<size_t>(t)];
    ranked = true;
  } else {
    total = sum_at_least(weights_, 0.0f);
  }
  // No finite distribution (an infinite or every logit NaN): the largest logit.
  if (!(total > 0) || !std::isfinite(total)) return argmax(logits);
  // top-p: the smallest prefix whose mass reaches top_p (at least one token).
  if (params_.top_p < 1.0f) {
    const double target = params_.top_p * total;
    if (!ranked) {
      // The prefix lies among the tokens within a spread once their mass reaches the target.
      collect_until([&] {
        double mass = 0;
        for (int32_t t : order_) mass += weights_[static_cast<size_t>(t)];
        return mass >= target;
      });
      ranked = true;
    }
    // Ranked in doubling chunks: the prefix is usually short.
    double mass = 0;
    size_t n = 0;
    for (size_t chunk = 64;; chunk *= 2) {
      sort_first(sorted + chunk);
      while (n < sorted && (n == 0 || mass < target))
        mass += weights_[static_cast<size_t>(order_[n++])];
      if ((n > 0 && mass >= target) || sorted == order_.size()) break;
    }
    order_.resize(n);
  }
  // min-p: tokens at least min_p times as likely as the top one (whose weight is 1).
  floor_ = params_.min_p;
  ranked_ = ranked;
  if (!ranked) {
    // No truncation by rank: draws walk the tokens in id order (the same distribution).
    kept_ = floor_ > 0 ? sum_at_least(weights_, floor_) : total;
    return -1;
  }
  size_t n = 1;
  while (n < order_.size() && weights_[static_cast<size_t>(order_[n])] >= floor_) ++n;
  order_.resize(std::min(n, order_.size()));
  kept_ = 0;
  for (int32_t t : order_) kept_ += weights_[static_cast<size_t>(t)];
  return -1;
}

bool Sampler::is_kept(int32_t token) const {
  if (token < 0 || static_cast<size_t>(token) >= weights_.size()) return false;
  if (ranked_) return std::find(order_.begin(), order_.end(), token) != order_.end();
  const float w = weights_[static_cast<size_t>(token)];
  return w > 0 && w >= floor_;
}

// Calls visit(t) for each kept token (ranked: in rank order; else in id order) until it returns
// true; returns that token, or -1.
template <typename Visit>
int32_t Sampler::visit_kept(Visit visit) const {
  if (ranked_) {
    for (int32_t t : order_)
      if (visit(t)) return t;
    return -1;
  }
  for (size_t i = 0; i < weights_.size(); ++i) {
    if (weights_[i] <= 0 || weights_[i] < floor_) continue;
    if (visit(static_cast<int32_t>(i))) return static_cast<int32_t>(i);
  }
  return -1;
}

// The kept token where `u` falls, u in [0, the sum of weight(t) over the kept tokens); the last
// one of positive weight when rounding leaves u past the end.
template <typename Weight>
int32_t Sampler::walk(double u, Weight weight) const {
  int32_t last = ranked_ ? order_.back() : 0;
  const int32_t found = visit_kept([&](int32_t t) {
    const double w = weight(t);
    if (!(w > 0)) return false;
    last = t;
    u -= w;
    return u < 0;
  });
  return found >= 0 ? found : last;
}

int32_t Sampler::sample_at(uint64_t position, std::span<float> logits,
                           std::span<const int32_t> prompt, std::span<const int32_t> generated) {
  const int32_t fixed = prepare(logits, prompt, generated);
  if (fixed >= 0) return fixed;
  return walk(uniform(position) * kept_,
              [&](int32_t t) { return weights_[static_cast<size_t>(t)]; });
}

Sampler::Verdict Sampler::verify_at(uint64_t position, int32_t draft,
                                    std::span<const float> draft_probs, std::span<float> logits,
                                    std::span<const int32_t> prompt,
                                    std::span<const int32_t> generated) {
  if (!draft_probs.empty() && draft_probs.size() != logits.size())
    throw Error("sampler: the draft's distribution has " + std::to_string(draft_probs.size()) +
                " probabilities for a vocabulary of " + std::to_string(logits.size()));
  // The acceptance test's draw: independent of the token draw at the same position.
  constexpr uint64_t kAcceptStream = 1;
  const int32_t fixed = prepare(logits, prompt, generated);
  // p is a point mass: the draft stands exactly when it is that token.
  if (fixed >= 0) return {fixed, fixed == draft};
  const auto w = [&](int32_t t) { return static_cast<double>(weights_[static_cast<size_t>(t)]); };
  const bool kept = is_kept(draft);
  const double p = kept ? w(draft) / kept_ : 0.0;
  const double q = draft_probs.empty() ? 1.0
                   : kept ? static_cast<double>(draft_probs[static_cast<size_t>(draft)])
                          : 0.0;
  if (q > 0 && uniform(position, kAcceptStream) * q < p) return {draft, true};
  // The residual, in weights_' scale: max(0, w - q * kept_).
  double residual = 0;
  if (draft_probs.empty()) {
    residual = kept_ - (kept ? w(draft) : 0.0);
    if (residual > 0)
      return {
          walk(uniform(position) * residual, [&](int32_t t) { return t == draft ? 0.0 : w(t); }),
          false};
  } else {
    const auto r = [&](int32_t t) {
      return std::max(0.0, w(t) - static_cast<double>(draft_probs[static_cast<size_t>(t)]) * kept_);
    };
    visit_kept([&](int32_t t) {
      residual += r(t);
      return false;
    });
    if (residual > 0) return {walk(uniform(position) * residual, r), false};
  }
  // p and q agree to rounding (so a rejection was all but impossible): a draw from p.
  return {walk(uniform(position) * kept_, w), false};
}

double log_sum_exp(std::span<const float> logits) {
  // exp in f32, vectorized (~2 ulp; a double exp per token is far slower over a large
  // vocabulary, and logprobs or perplexity take one per row), summed in double.
  const float max = max_logit(logits);
  if (!std::isfinite(max)) return max;
  thread_local std::vector<float> weights;
  weights.resize(logits.size());
  ops::exp_scaled(logits.data(), static_cast<int64_t>(logits.size()), max, 1.0f, weights.data());
  return max + std::log(sum_at_least(weights, 0.0f));
}

float token_logprob(std::span<const float> logits, int32_t token) {
  return static_cast<float>(logits[static_cast<size_t>(token)] - log_sum_exp(logits));
}

std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int top, double lse) {
  const size_t n = std::min(static_cast<size_t>(std::max(top, 0)), logits.size());
  if (n == 0) return {};
  // One pass keeping the n best so far in descending order (ties: lower id first; NaNs never);
  // a token enters only if it beats the last of them, which few do.
  std::vector<int32_t> best;
  best.reserve(n + 1);
  const auto higher = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  for (size_t i = 0; i < logits.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    if (std::isnan(logits[i]) || (best.size() == n && !higher(id, best.back()))) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), id, higher), id);
    if (best.size() > n) best.pop_back();
  }
  std::vector<TokenLogprob> out;
  for (int32_t id : best)
    out.push_back({id, static_cast<float>(logits[static_cast<size_t>(id)] - lse)});
  return out;
}

}  // namespace dq4
