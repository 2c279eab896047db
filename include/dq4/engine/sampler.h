#pragma once
// Picking the next token from a row of logits: penalties, temperature, top-k, top-p, min-p, then
// a draw from a seeded generator (same seed, same tokens), or greedy when temperature is 0. The
// draw for output position p depends on (seed, p) alone, so that a token verified at p in a
// speculative step is the token plain decoding would have drawn there.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dq4 {

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy (argmax; the lowest id wins a tie)
  int top_k = 0;             // 0 or < 0 = all tokens
  float top_p = 1.0f;        // nucleus: smallest set whose probability reaches top_p
  float min_p = 0.0f;        // drop tokens below min_p * the top token's probability
  // HF's repetition penalty over prompt and generated tokens (1 = off): a seen token's logit is
  // divided by it when positive, multiplied when negative.
  float repetition_penalty = 1.0f;
  // OpenAI's penalties over the generated tokens: logit -= presence * (count > 0) + frequency *
  // count.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  std::optional<uint64_t> seed;  // nullopt: a random seed

  // Throws dq4::Error naming the field for a value out of range.
  void validate() const;
};

// One token's log-probability under the model (log-softmax of the raw logits).
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // Picks the token at output position generated.size(). `prompt` and `generated` feed the
  // penalties; `logits` is modified in place (penalties, temperature).
  int32_t sample(std::span<float> logits, std::span<const int32_t> prompt,
                 std::span<const int32_t> generated) {
    return sample_at(generated.size(), logits, prompt, generated);
  }
  // The same with the draw of output position `position`.
  int32_t sample_at(uint64_t position, std::span<float> logits, std::span<const int32_t> prompt,
                    std::span<const int32_t> generated);

  // Speculative verification by rejection sampling (Leviathan et al.): with p the distribution
  // sample_at() draws from and q the draft's, `draft` stands with probability
  // min(1, p(draft) / q(draft)); otherwise the token is drawn from the residual max(0, p - q),
  // normalized. Either way the token at `position` follows p. `draft_probs`: q over the
  // vocabulary; empty for a proposer without a distribution, whose draft is then a point mass
  // (q(draft) = 1: accepted with probability p(draft), else drawn from p without it).
  struct Verdict {
    int32_t token = 0;
    bool accepted = false;  // token == draft, by acceptance
  };
  Verdict verify_at(uint64_t position, int32_t draft, std::span<const float> draft_probs,
                    std::span<float> logits, std::span<const int32_t> prompt,
                    std::span<const int32_t> generated);

  const SamplingParams& params() const { return params_; }

 private:
  SamplingParams params_;
  uint64_t seed_ = 0;
  // [0, 1), a function of (seed, position, stream): stream 0 draws tokens, others are
  // independent of it (verification's acceptance test).
  double uniform(uint64_t position, uint64_t stream = 0) const;
  // Applies penalties, temperature and truncation to `logits`: the distribution is then weights_
  // over the kept tokens (order_ when ranked_, else every token of weight >= floor_), of total
  // kept_. Returns the token when there is no distribution to draw from (greedy, or no finite
  // weight), else -1.
  int32_t prepare(std::span<float> logits, std::span<const int32_t> prompt,
                  std::span<const int32_t> generated);
  bool is_kept(int32_t token) const;
  template <typename Visit>
  int32_t visit_kept(Visit visit) const;
  template <typename Weight>
  int32_t walk(double u, Weight weight) const;
  bool ranked_ = false;
  float floor_ = 0;
  double kept_ = 0;
  // Working buffers of a vocabulary's size, kept across calls (a step allocates nothing).
  std::vector<int32_t> order_;
  std::vector<float> weights_;
  std::vector<int32_t> counts_;  // token occurrences, for the penalties
};

// log(sum exp(logits)) of a row of raw logits (NaNs ignored).
double log_sum_exp(std::span<const float> logits);
// The logprob of `token` in a row of raw logits.
float token_logprob(std::span<const float> logits, int32_t token);
// The `top` most likely tokens (descending; ties: lower id first) of a row of raw logits and
// their logprobs, given the row's log_sum_exp() as `lse`.
std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int top, double lse);

}  // namespace dq4
