#pragma once
// A mixture-of-experts router's choice for one token, as Hugging Face's Qwen-MoE, Mixtral, OLMoE
// and Ernie 4.5 MoE blocks make it: softmax over the experts' logits (f32), the top k
// probabilities, optionally renormalized to sum to 1 (norm_topk_prob; Mixtral always, which equals
// its softmax over the top-k logits). Ernie 4.5 chooses by the probabilities plus a per-expert
// selection bias but weights by the probabilities alone, and divides them by their sum or by a
// least divisor, whichever is larger. Ties go to the lower expert index: the k chosen are the
// first k of the experts ordered by (biased) probability, descending, then by index.

#include <cstdint>

namespace dq4::model {

struct RoutingRule {
  bool renormalize = false;
  float norm_min = 0;                     // the renormalization's least divisor
  const float* selection_bias = nullptr;  // [experts], or none
};

// `logits` holds the experts' router logits and is overwritten with their probabilities; writes
// the chosen experts to chosen[k] (in descending order of choice) and their weights to weights[k].
void route_token(float* logits, int64_t experts, int64_t k, const RoutingRule& rule,
                 int32_t* chosen, float* weights);

}  // namespace dq4::model
