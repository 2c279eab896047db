#pragma once
// A mixture-of-experts router's choice for one token, as Hugging Face's Qwen-MoE, Mixtral, OLMoE,
// Ernie 4.5 MoE and GLM-4 MoE blocks make it, in f32:
//   scores: the softmax over the experts' logits (GLM: each logit's sigmoid);
//   choice: the top k of the scores plus the selection bias where there is one (GLM with groups:
//     among the experts of the groups_used groups whose two best biased scores sum highest, the
//     others' biased scores taken as 0, as transformers masks them);
//   weights: the chosen experts' unbiased scores, renormalized where the rule says (divided by
//     their sum plus norm_epsilon, or by norm_min where that is larger; Mixtral's equals its
//     softmax over the top-k logits), times the rule's scale.
// Ties go to the lower index: the k chosen are the first k of the experts ordered by biased score,
// descending, then by index (the groups likewise).

#include <cstdint>

#include "dq4/model/architecture.h"

namespace dq4::model {

// `logits` holds the experts' router logits and is overwritten with their scores; `selection_bias`
// is [experts] or null. Writes the chosen experts to chosen[k] (in order of choice) and their
// weights to weights[k].
void route_token(float* logits, int64_t experts, int64_t k, const ExpertRouting& rule,
                 const float* selection_bias, int32_t* chosen, float* weights);

}  // namespace dq4::model
