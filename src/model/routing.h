#pragma once
// A mixture-of-experts router's choice for one token, as Hugging Face's Qwen-MoE, Mixtral and
// OLMoE blocks make it: softmax over the experts' logits (f32), the top k probabilities, optionally
// renormalized to sum to 1 (norm_topk_prob; Mixtral always, which equals its softmax over the
// top-k logits). Ties go to the lower expert index: the k chosen are the first k of the experts
// ordered by probability, descending, then by index.

#include <cstdint>

namespace dq4::model {

// `logits` holds the experts' router logits and is overwritten with their probabilities; writes
// the chosen experts to chosen[k] (in descending probability) and their weights to weights[k].
void route_token(float* logits, int64_t experts, int64_t k, bool renormalize, int32_t* chosen,
                 float* weights);

}  // namespace dq4::model
