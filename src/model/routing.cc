// route_token: scores, the (group-limited, biased) top-k, the weights.

#include "routing.h"

#include <algorithm>
#include <cmath>

namespace dq4::model {
namespace {

// The index of the first largest of values[0, count) whose `taken` flag is clear.
int64_t best_untaken(const float* values, const bool* taken, int64_t count) {
  int64_t best = -1;
  for (int64_t i = 0; i < count; ++i)
    if (!taken[i] && (best < 0 || values[i] > values[best])) best = i;
  return best;
}

}  // namespace

void route_token(float* p, int64_t experts, int64_t k, const ExpertRouting& rule,
                 const float* selection_bias, int32_t* chosen, float* weights) {
  if (rule.sigmoid) {
    for (int64_t e = 0; e < experts; ++e) p[e] = 1.0f / (1.0f + std::exp(-p[e]));
  } else {
    float max = p[0];
    for (int64_t e = 1; e < experts; ++e) max = std::fmax(max, p[e]);
    float sum = 0;
    for (int64_t e = 0; e < experts; ++e) {
      p[e] = std::exp(p[e] - max);
      sum += p[e];
    }
    for (int64_t e = 0; e < experts; ++e) p[e] /= sum;
  }
  // The scores the choice is made on (Architecture refuses more than kMaxExperts); only the
  // experts' (and groups') entries are written, once per token.
  float choice[kMaxExperts];
  bool taken[kMaxExperts];
  for (int64_t e = 0; e < experts; ++e) {
    choice[e] = selection_bias != nullptr ? p[e] + selection_bias[e] : p[e];
    taken[e] = false;
  }
  if (rule.groups > 1) {
    const int64_t size = experts / rule.groups;
    float group_score[kMaxExperts];
    bool group_taken[kMaxExperts];
    std::fill_n(group_taken, rule.groups, false);
    for (int64_t g = 0; g < rule.groups; ++g) {
      const float* c = choice + g * size;
      const int64_t first = best_untaken(c, taken, size);
      taken[first] = true;
      group_score[g] = c[first] + c[best_untaken(c, taken, size)];
      taken[first] = false;
    }
    for (int64_t j = 0; j < rule.groups_used; ++j)
      group_taken[best_untaken(group_score, group_taken, rule.groups)] = true;
    for (int64_t e = 0; e < experts; ++e)
      if (!group_taken[e / size]) choice[e] = 0.0f;
  }
  for (int64_t j = 0; j < k; ++j) {
    const int64_t best = best_untaken(choice, taken, experts);
    taken[best] = true;
    chosen[j] = static_cast<int32_t>(best);
    weights[j] = p[best];
  }
  if (rule.renormalize) {
    float total = 0;
    for (int64_t j = 0; j < k; ++j) total += weights[j];
    total += rule.norm_epsilon;
    if (total < rule.norm_min) total = rule.norm_min;
    for (int64_t j = 0; j < k; ++j) weights[j] /= total;
  }
  for (int64_t j = 0; j < k; ++j) weights[j] *= rule.scale;
}

}  // namespace dq4::model
