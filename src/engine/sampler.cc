// Sampler: penalties, temperature, top-k / top-p / min-p truncation and a seeded draw.

#include "dq4/sampler.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <random>
#include <unordered_map>

#include "dq4/error.h"

namespace dq4 {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// The first index of the largest logit (NaNs never win; 0 when every logit is NaN). The maximum
// first, in 16 independent lanes: one running best compared element by element is a chain of
// dependent compares (~120 us for a 128K vocabulary, per row, while the worker threads wait).
int32_t argmax(std::span<const float> logits) {
  constexpr size_t kLanes = 16;
  float lane_max[kLanes];
  std::fill(std::begin(lane_max), std::end(lane_max), -std::numeric_limits<float>::infinity());
  size_t i = 0;
  for (; i + kLanes <= logits.size(); i += kLanes)
    for (size_t j = 0; j < kLanes; ++j)
      lane_max[j] = logits[i + j] > lane_max[j] ? logits[i + j] : lane_max[j];
  for (; i < logits.size(); ++i) lane_max[0] = logits[i] > lane_max[0] ? logits[i] : lane_max[0];
  const float max = *std::max_element(std::begin(lane_max), std::end(lane_max));
  for (size_t k = 0; k < logits.size(); ++k)
    if (logits[k] == max) return static_cast<int32_t>(k);
  return 0;
}

// log(sum(exp(logits))) computed stably.
double log_sum_exp(std::span<const float> logits) {
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max);
  return max + std::log(sum);
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
  uint64_t seed = params.seed ? *params.seed : std::random_device{}();
  for (uint64_t& s : state_) s = splitmix64(seed);
}

double Sampler::uniform() {
  // xoshiro256**: the top 53 bits as a double in [0, 1).
  const uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return static_cast<double>(result >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> prompt,
                        std::span<const int32_t> generated) {
  const auto in_vocab = [&](int32_t t) { return t >= 0 && static_cast<size_t>(t) < logits.size(); };
  if (params_.repetition_penalty != 1.0f) {
    std::vector<bool> seen(logits.size(), false);
    for (auto ids : {prompt, generated})
      for (int32_t t : ids)
        if (in_vocab(t) && !seen[static_cast<size_t>(t)]) {
          seen[static_cast<size_t>(t)] = true;
          float& v = logits[static_cast<size_t>(t)];
          v = v > 0 ? v / params_.repetition_penalty : v * params_.repetition_penalty;
        }
  }
  if (params_.presence_penalty != 0 || params_.frequency_penalty != 0) {
    std::unordered_map<int32_t, int> counts;
    for (int32_t t : generated)
      if (in_vocab(t)) ++counts[t];
    for (const auto& [t, n] : counts)
      logits[static_cast<size_t>(t)] -=
          params_.presence_penalty + params_.frequency_penalty * static_cast<float>(n);
  }
  if (params_.temperature == 0) return argmax(logits);

  // Probabilities at this temperature, in descending order (ties: lower id first) over the
  // tokens top-k keeps.
  const size_t vocab = logits.size();
  const float inv_t = 1.0f / params_.temperature;
  const float max = *std::max_element(logits.begin(), logits.end());
  order_.resize(vocab);
  for (size_t i = 0; i < vocab; ++i) order_[i] = static_cast<int32_t>(i);
  const auto higher = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  size_t keep = vocab;
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < vocab) {
    keep = static_cast<size_t>(params_.top_k);
    std::nth_element(order_.begin(), order_.begin() + static_cast<ptrdiff_t>(keep), order_.end(),
                     higher);
    order_.resize(keep);
  }
  std::sort(order_.begin(), order_.end(), higher);
  probs_.resize(keep);
  double total = 0;
  for (size_t i = 0; i < keep; ++i) {
    const double p = std::exp((logits[static_cast<size_t>(order_[i])] - max) * inv_t);
    probs_[i] = static_cast<float>(p);
    total += p;
  }
  // top-p: the smallest prefix whose mass reaches top_p (at least one token).
  if (params_.top_p < 1.0f) {
    double mass = 0;
    size_t n = 0;
    while (n < keep && (n == 0 || mass < params_.top_p * total)) mass += probs_[n++];
    keep = n;
  }
  // min-p: tokens at least min_p times as likely as the top one.
  if (params_.min_p > 0) {
    const float floor = params_.min_p * probs_[0];
    size_t n = 1;
    while (n < keep && probs_[n] >= floor) ++n;
    keep = n;
  }
  double kept = 0;
  for (size_t i = 0; i < keep; ++i) kept += probs_[i];
  double u = uniform() * kept;
  for (size_t i = 0; i < keep; ++i) {
    u -= probs_[i];
    if (u < 0) return order_[i];
  }
  return order_[keep - 1];
}

float token_logprob(std::span<const float> logits, int32_t token) {
  return static_cast<float>(logits[static_cast<size_t>(token)] - log_sum_exp(logits));
}

std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int top) {
  const double lse = log_sum_exp(logits);
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  const size_t n = std::min(static_cast<size_t>(std::max(top, 0)), ids.size());
  std::partial_sort(
      ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n), ids.end(), [&](int32_t a, int32_t b) {
        const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
        return la > lb || (la == lb && a < b);
      });
  std::vector<TokenLogprob> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back({ids[i], static_cast<float>(logits[static_cast<size_t>(ids[i])] - lse)});
  return out;
}

}  // namespace dq4
