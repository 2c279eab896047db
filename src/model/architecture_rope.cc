// An architecture's rotary embeddings from config.json: the rope variant and its settings (linear,
// llama3, longrope, yarn), the context they extend to, and the inverse frequencies.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "architecture_rules.h"
#include "dq4/model/architecture.h"

namespace dq4 {
namespace model {
namespace {

// The context as vLLM derives it from a rope scaling, where longer than max_position_embeddings.
void extend_context(double extended, Architecture& a) {
  if (extended > static_cast<double>(a.context_length))
    a.context_length =
        extended >= static_cast<double>(INT32_MAX) ? INT32_MAX : static_cast<int64_t>(extended);
}

// YaRN as transformers computes it: the original context from rope_scaling (else
// max_position_embeddings), the factor given (else the ratio of the two contexts), the attention
// factor given or 1 + 0.1 ln(factor) (a ratio of two such terms where mscale and mscale_all_dim are
// both given), and the ramp's bounds: the frequency indices that turn beta_fast and beta_slow
// times over the original context.
void configure_yarn(const ModelConfig& c, const std::string& file, Architecture& a) {
  const RopeScaling& r = c.rope_scaling;
  if (r.original_max_position_embeddings < 0)
    refuse(file, "rope_scaling.original_max_position_embeddings", "must be positive");
  if (c.rope_theta == 1) refuse(file, "rope_theta", "yarn's ramp needs a base other than 1");
  const int64_t original = r.original_max_position_embeddings > 0
                               ? r.original_max_position_embeddings
                               : c.max_position_embeddings;
  const double factor =
      r.factor_given ? r.factor : static_cast<double>(c.max_position_embeddings) / original;
  if (!(factor > 0) || !std::isfinite(factor))
    refuse(file, "rope_scaling.factor", "must be a positive number");
  const auto mscale = [factor](double m) {
    return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1;
  };
  double attention = mscale(1);
  if (r.attention_factor > 0)
    attention = r.attention_factor;
  else if (r.mscale > 0 && r.mscale_all_dim > 0)
    attention = mscale(r.mscale) / mscale(r.mscale_all_dim);
  a.rope_attention_factor = static_cast<float>(attention);

  const auto dim = static_cast<double>(a.rotary_dim);
  const auto index_of = [&](double rotations) {
    return dim * std::log(static_cast<double>(original) / (rotations * 2 * M_PI)) /
           (2 * std::log(c.rope_theta));
  };
  double low = index_of(r.beta_fast), high = index_of(r.beta_slow);
  if (!std::isfinite(low)) refuse(file, "rope_scaling.beta_fast", "out of range");
  if (!std::isfinite(high)) refuse(file, "rope_scaling.beta_slow", "out of range");
  if (r.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0), high = std::min(high, dim - 1);
  if (low == high) high += 0.001;  // as transformers: no division by zero
  a.yarn = {.original_context = original, .factor = factor, .low = low, .high = high};
  extend_context(static_cast<double>(original) * factor, a);
}

}  // namespace

void check_rope(const ModelConfig& c, const std::string& file, Architecture& a) {
  const RopeScaling& r = c.rope_scaling;
  if (!r.other_keys.empty())
    refuse(file, r.other_keys.front(), "dq4 does not implement this rope setting");
  if (r.type.empty()) {
    a.rope = RopeVariant::plain;
  } else if (r.type == "linear") {
    if (!(r.factor > 0)) refuse(file, "rope_scaling.factor", "must be positive");
    a.rope = RopeVariant::linear;
    // Gemma 3's max_position_embeddings is the scaled context already (vLLM).
    if (!c.architecture.starts_with("Gemma3"))
      extend_context(static_cast<double>(c.max_position_embeddings) * r.factor, a);
  } else if (r.type == "llama3") {
    if (!(r.factor > 0)) refuse(file, "rope_scaling.factor", "must be positive");
    if (r.original_max_position_embeddings <= 0)
      refuse(file, "rope_scaling.original_max_position_embeddings", "missing or not positive");
    if (!(r.high_freq_factor > r.low_freq_factor) || !(r.low_freq_factor > 0))
      refuse(file, "rope_scaling", "needs 0 < low_freq_factor < high_freq_factor");
    a.rope = RopeVariant::llama3;
  } else if ((r.type == "longrope" || r.type == "su") && c.architecture == "Phi3ForCausalLM") {
    a.rope = RopeVariant::longrope;
  } else if (r.type == "yarn") {
    a.rope = RopeVariant::yarn;
  } else {
    refuse(file, "rope_scaling.rope_type",
           "'" + r.type +
               "' is not supported (dq4 runs none, 'linear', 'llama3', 'yarn' and Phi-3's "
               "'longrope')");
  }
  // yarn's settings with another rope type would be ignored; longrope reads attention_factor too.
  if (a.rope != RopeVariant::yarn) {
    const char* key = r.mscale > 0           ? "mscale"
                      : r.mscale_all_dim > 0 ? "mscale_all_dim"
                      : r.beta_fast != 32    ? "beta_fast"
                      : r.beta_slow != 1     ? "beta_slow"
                      : !r.truncate          ? "truncate"
                      : a.rope != RopeVariant::longrope && r.attention_factor > 0
                          ? "attention_factor"
                          : nullptr;
    if (key != nullptr)
      refuse(file, std::string("rope_scaling.") + key,
             "is a setting of rope_type 'yarn', not of '" + r.type + "'");
  }
  if (c.partial_rotary_factor != 1.0 && c.architecture != "Phi3ForCausalLM" &&
      !c.architecture.starts_with("Glm4"))
    refuse(file, "partial_rotary_factor",
           "dq4 rotates whole heads only (1.0) but for Phi-3, GLM-4 and GLM-4 MoE");
  if (!(c.partial_rotary_factor > 0 && c.partial_rotary_factor <= 1))
    refuse(file, "partial_rotary_factor", "must be in (0, 1]");
  a.rotary_dim = static_cast<int64_t>(static_cast<double>(c.head_dim) * c.partial_rotary_factor);
  if (a.rotary_dim % 2 != 0 || a.rotary_dim == 0)
    refuse(file, "head_dim", "the rotated part of a head must be even for rotary embeddings");
  if (a.rope == RopeVariant::yarn) configure_yarn(c, file, a);
  if (a.rope == RopeVariant::longrope) {
    const int64_t half = a.rotary_dim / 2;
    if (static_cast<int64_t>(r.short_factor.size()) != half ||
        static_cast<int64_t>(r.long_factor.size()) != half)
      refuse(file, "rope_scaling.short_factor",
             "longrope needs short_factor and long_factor of rotary_dim / 2 = " +
                 std::to_string(half) + " values each");
    for (const auto* list : {&r.short_factor, &r.long_factor})
      for (double f : *list)
        if (!(f > 0)) refuse(file, "rope_scaling.long_factor", "factors must be positive");
    // As transformers: the original context of the top level (transformers 5: of
    // rope_parameters; else max_position_embeddings), and the attention factor given or that of
    // the context's extension.
    const int64_t original =
        c.original_max_position_embeddings > 0   ? c.original_max_position_embeddings
        : r.original_max_position_embeddings > 0 ? r.original_max_position_embeddings
                                                 : c.max_position_embeddings;
    a.longrope_original_context = original;
    const double factor = static_cast<double>(c.max_position_embeddings) / original;
    a.rope_attention_factor =
        r.attention_factor > 0 ? static_cast<float>(r.attention_factor)
        : factor <= 1.0
            ? 1.0f
            : static_cast<float>(std::sqrt(1 + std::log(factor) / std::log(double(original))));
  }
}

}  // namespace model

namespace {

// base ** (2i / dim) in float32, as transformers computes it.
float base_power(double base, int64_t i, int64_t dim) {
  const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
  return std::pow(static_cast<float>(base), exponent);
}

}  // namespace

std::vector<float> Architecture::rope_inv_freq(bool long_factors) const {
  const int64_t half = rotary_dim / 2;
  const RopeScaling& r = config.rope_scaling;
  std::vector<float> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    float f = 1.0f / base_power(config.rope_theta, i, rotary_dim);
    if (rope == RopeVariant::linear) f /= static_cast<float>(r.factor);
    if (rope == RopeVariant::longrope) {
      const auto& factors = long_factors ? r.long_factor : r.short_factor;
      f = 1.0f / (static_cast<float>(factors[static_cast<size_t>(i)]) *
                  base_power(config.rope_theta, i, rotary_dim));
    }
    if (rope == RopeVariant::yarn) {
      // In f32 as transformers: each frequency's share of extrapolation (1 below the ramp, 0
      // above it) mixes the unscaled frequency with the one divided by the factor.
      const float power = base_power(config.rope_theta, i, rotary_dim);
      const float interpolated = 1.0f / (static_cast<float>(yarn.factor) * power);
      const float ramp = std::clamp((static_cast<float>(i) - static_cast<float>(yarn.low)) /
                                        static_cast<float>(yarn.high - yarn.low),
                                    0.0f, 1.0f);
      const float extrapolation = 1.0f - ramp;
      f = interpolated * (1.0f - extrapolation) + f * extrapolation;
    }
    if (rope == RopeVariant::llama3) {
      const double old_len = static_cast<double>(r.original_max_position_embeddings);
      const double low_wavelen = old_len / r.low_freq_factor;
      const double high_wavelen = old_len / r.high_freq_factor;
      const double wavelen = 2 * M_PI / f;
      if (wavelen > low_wavelen) {
        f = static_cast<float>(f / r.factor);
      } else if (wavelen >= high_wavelen) {
        const double smooth =
            (old_len / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        f = static_cast<float>((1 - smooth) * f / r.factor + smooth * f);
      }
    }
    inv[static_cast<size_t>(i)] = f;
  }
  return inv;
}

std::vector<float> Architecture::local_rope_inv_freq() const {
  std::vector<float> inv(static_cast<size_t>(rotary_dim / 2));
  for (size_t i = 0; i < inv.size(); ++i)
    inv[i] = 1.0f / base_power(local_rope_theta, static_cast<int64_t>(i), rotary_dim);
  return inv;
}
}  // namespace dq4
