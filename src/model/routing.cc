// route_token: softmax, top-k (ties to the lower index, by the biased probabilities where a
// selection bias is given), renormalization.

#include "routing.h"

#include <cmath>

namespace dq4::model {

void route_token(float* p, int64_t experts, int64_t k, const RoutingRule& rule, int32_t* chosen,
                 float* weights) {
  float max = p[0];
  for (int64_t e = 1; e < experts; ++e) max = std::fmax(max, p[e]);
  float sum = 0;
  for (int64_t e = 0; e < experts; ++e) {
    p[e] = std::exp(p[e] - max);
    sum += p[e];
  }
  for (int64_t e = 0; e < experts; ++e) p[e] /= sum;
  const float* bias = rule.selection_bias;
  const auto score = [&](int64_t e) { return bias != nullptr ? p[e] + bias[e] : p[e]; };
  // k selection passes: each takes the first (lowest-index) best expert not yet chosen.
  for (int64_t j = 0; j < k; ++j) {
    int32_t best = -1;
    for (int64_t e = 0; e < experts; ++e) {
      bool taken = false;
      for (int64_t i = 0; i < j; ++i) taken = taken || chosen[i] == e;
      if (!taken && (best < 0 || score(e) > score(best))) best = static_cast<int32_t>(e);
    }
    chosen[j] = best;
    weights[j] = p[best];
  }
  if (rule.renormalize) {
    float total = 0;
    for (int64_t j = 0; j < k; ++j) total += weights[j];
    if (total < rule.norm_min) total = rule.norm_min;
    for (int64_t j = 0; j < k; ++j) weights[j] /= total;
  }
}

}  // namespace dq4::model
