// config.json -> ModelConfig for the Llama family, and the linear modules such a model has.

#include "dq4/io/model_config.h"

#include <climits>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string_view>
#include <utility>

#include "dq4/io/text_file.h"
#include "dq4/kernels/error.h"
#include "json_fields.h"
#include "strict_json.h"
#include "text_config.h"

namespace dq4 {
namespace {

int64_t positive(const io::JsonFields& fields, std::string_view key, int64_t value) {
  if (value <= 0) fields.fail(key, "must be positive, got " + std::to_string(value));
  return value;
}

// The integer `key`, `fallback` where absent or null; refused when negative.
int64_t non_negative(const io::JsonFields& fields, std::string_view key, int64_t fallback) {
  const int64_t value = fields.integer(key).value_or(fallback);
  if (value < 0) fields.fail(key, "must not be negative");
  return value;
}

// A setting that is 0 when absent or null (off, or its default) and positive and finite when given.
double positive_or_off(const io::JsonFields& fields, std::string_view key) {
  const std::optional<double> value = fields.number(key);
  if (value && !(*value > 0 && std::isfinite(*value)))
    fields.fail(key, "must be a positive number, got " + io::json_snippet(*fields.find(key)));
  return value.value_or(0.0);
}

// rope_scaling (transformers 4) or rope_parameters (transformers 5, which also holds rope_theta).
RopeScaling parse_rope_scaling(const io::JsonFields& rope) {
  RopeScaling r;
  if (rope.has("rope_type"))
    r.type = rope.required_string("rope_type");
  else if (rope.has("type"))
    r.type = rope.required_string("type");
  else
    rope.fail("rope_type", "missing");
  r.factor_given = rope.number("factor").has_value();
  r.factor = rope.number("factor").value_or(1.0);
  r.low_freq_factor = rope.number("low_freq_factor").value_or(1.0);
  r.high_freq_factor = rope.number("high_freq_factor").value_or(4.0);
  r.original_max_position_embeddings = rope.integer("original_max_position_embeddings").value_or(0);
  r.short_factor = rope.numbers("short_factor");
  r.long_factor = rope.numbers("long_factor");
  r.attention_factor = positive_or_off(rope, "attention_factor");
  // mscale_all_dim 0 is how some configs say "none" (transformers reads 0 as absent).
  for (auto [key, value] :
       {std::pair{"mscale", &r.mscale}, {"mscale_all_dim", &r.mscale_all_dim}}) {
    *value = rope.number(key).value_or(0.0);
    if (!(*value >= 0 && std::isfinite(*value)))
      rope.fail(key, "must be a number >= 0, got " + io::json_snippet(*rope.find(key)));
  }
  if (const double beta = positive_or_off(rope, "beta_fast"); beta > 0) r.beta_fast = beta;
  if (const double beta = positive_or_off(rope, "beta_slow"); beta > 0) r.beta_slow = beta;
  r.truncate = rope.boolean("truncate").value_or(true);
  r.llama_4_scaling_beta = positive_or_off(rope, "llama_4_scaling_beta");
  return r;
}

// The rope keys parse_rope_scaling reads; any other is kept in other_keys.
bool rope_key_read(std::string_view key) {
  for (const char* read :
       {"rope_type", "type", "factor", "low_freq_factor", "high_freq_factor",
        "original_max_position_embeddings", "short_factor", "long_factor", "attention_factor",
        "mscale", "mscale_all_dim", "beta_fast", "beta_slow", "truncate", "llama_4_scaling_beta"})
    if (key == read) return true;
  return false;
}

// transformers 5's rope_parameters (which holds rope_theta too), or one of its per-layer-type sets.
void read_rope_parameters(const io::JsonFields& rope, ModelConfig& c) {
  c.rope_theta = rope.number("rope_theta").value_or(c.rope_theta);
  c.partial_rotary_factor = rope.number("partial_rotary_factor").value_or(c.partial_rotary_factor);
  c.rope_scaling = parse_rope_scaling(rope);
  if (c.rope_scaling.type == "default") c.rope_scaling.type.clear();
  for (const auto& [key, value] : rope.json().items())
    if (!rope_key_read(key) && key != "rope_theta" && key != "partial_rotary_factor" &&
        !value.is_null())
      c.rope_scaling.other_keys.push_back(rope.path() + "." + key);
}

// transformers 5 writes rope_parameters per layer type where the types differ (Gemma 3: the
// full-attention layers' scaled rope, the sliding ones' own base); dq4 runs the sliding layers'
// rope unscaled, at that base (rope_local_base_freq).
void read_rope_by_layer_type(const io::JsonFields& by_type, ModelConfig& c) {
  if (by_type.has("full_attention")) read_rope_parameters(by_type.object("full_attention"), c);
  if (by_type.has("sliding_attention")) {
    const io::JsonFields sliding = by_type.object("sliding_attention");
    const std::string type = sliding.string("rope_type").value_or("default");
    if (type != "default")
      sliding.fail("rope_type", "'" + type + "': dq4 runs the sliding layers' rope unscaled");
    for (const auto& [key, value] : sliding.json().items())
      if (key != "rope_type" && key != "rope_theta" && !value.is_null())
        c.rope_scaling.other_keys.push_back(sliding.path() + "." + key);
    if (const double base = positive_or_off(sliding, "rope_theta"); base > 0)
      c.rope_local_base_freq = base;
  }
  for (const auto& [key, value] : by_type.json().items())
    if (key != "full_attention" && key != "sliding_attention" && !value.is_null())
      c.rope_scaling.other_keys.push_back(by_type.path() + "." + key);
}

std::vector<int32_t> token_ids(const io::JsonFields& fields, std::string_view key) {
  const nlohmann::json* v = fields.find(key);
  if (v == nullptr) return {};
  std::vector<int32_t> ids;
  const auto add = [&](const nlohmann::json& id) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      fields.fail(key, "expected a token id or a list of token ids, got " + io::json_snippet(*v));
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  };
  if (v->is_array())
    for (const nlohmann::json& id : *v) add(id);
  else
    add(*v);
  return ids;
}

}  // namespace

ModelConfig ModelConfig::parse(std::string_view config_json, const std::string& file) {
  nlohmann::json json = io::parse_strict_json(config_json, file);
  if (io::has_text_model(json))
    io::lift_text_config(json, file);
  else if (json.is_object())
    io::add_type_defaults(json);
  const io::JsonFields fields(json, file, "");
  ModelConfig c;

  const nlohmann::json* architectures = fields.find("architectures");
  if (architectures == nullptr || !architectures->is_array() || architectures->size() != 1 ||
      !(*architectures)[0].is_string())
    fields.fail("architectures", "expected a list of one architecture name");
  c.architecture = (*architectures)[0].get<std::string>();
  c.model_type = fields.string("model_type").value_or("");

  c.hidden_size = positive(fields, "hidden_size", fields.required_integer("hidden_size"));
  c.intermediate_size =
      positive(fields, "intermediate_size", fields.required_integer("intermediate_size"));
  c.num_hidden_layers =
      positive(fields, "num_hidden_layers", fields.required_integer("num_hidden_layers"));
  c.num_attention_heads =
      positive(fields, "num_attention_heads", fields.required_integer("num_attention_heads"));
  c.num_key_value_heads =
      positive(fields, "num_key_value_heads",
               fields.integer("num_key_value_heads").value_or(c.num_attention_heads));
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    fields.fail("num_key_value_heads", std::to_string(c.num_key_value_heads) +
                                           " does not divide num_attention_heads " +
                                           std::to_string(c.num_attention_heads));
  const auto head_dim = fields.integer("head_dim");
  if (!head_dim && c.hidden_size % c.num_attention_heads != 0)
    fields.fail("head_dim", "missing, and hidden_size is not a multiple of num_attention_heads");
  c.head_dim =
      positive(fields, "head_dim", head_dim.value_or(c.hidden_size / c.num_attention_heads));
  c.vocab_size = positive(fields, "vocab_size", fields.required_integer("vocab_size"));
  c.max_position_embeddings = positive(fields, "max_position_embeddings",
                                       fields.integer("max_position_embeddings").value_or(2048));
  c.rms_norm_eps = fields.number("rms_norm_eps").value_or(1e-6);
  if (!(c.rms_norm_eps > 0)) fields.fail("rms_norm_eps", "must be positive");
  c.rope_theta = fields.number("rope_theta").value_or(10000.0);
  if (fields.has("rope_parameters")) {
    const io::JsonFields rope = fields.object("rope_parameters");
    if (rope.has("full_attention") || rope.has("sliding_attention"))
      read_rope_by_layer_type(rope, c);
    else
      read_rope_parameters(rope, c);
  } else if (fields.has("rope_scaling")) {
    c.rope_scaling = parse_rope_scaling(fields.object("rope_scaling"));
    if (c.rope_scaling.type == "default") c.rope_scaling.type.clear();
    for (const auto& [key, value] : fields.find("rope_scaling")->items())
      if (!rope_key_read(key) && !value.is_null())
        c.rope_scaling.other_keys.push_back("rope_scaling." + key);
  }
  // The frequencies are computed in f32: a base that f32 rounds to 0 or infinity would make them
  // infinite or NaN, and so every rotation.
  if (!(c.rope_theta > 0) || !std::isnormal(static_cast<float>(c.rope_theta)))
    fields.fail("rope_theta", "must be a positive number in float's range");
  // Gemma's MLP runs hidden_activation (its configs also carry a hidden_act); no other family
  // writes that key.
  c.hidden_act =
      fields.string("hidden_activation").value_or(fields.string("hidden_act").value_or("silu"));
  c.partial_rotary_factor =
      fields.number("partial_rotary_factor").value_or(c.partial_rotary_factor);
  // Qwen2/Qwen3 write a sliding_window that applies only with use_sliding_window: true.
  const bool window_switch = fields.has("use_sliding_window");
  if (!window_switch || fields.boolean("use_sliding_window").value_or(false)) {
    const auto window = fields.integer("sliding_window");
    if (window) c.sliding_window = positive(fields, "sliding_window", *window);
  }
  if (const auto first = fields.integer("max_window_layers")) {
    if (*first < 0) fields.fail("max_window_layers", "must be >= 0");
    c.max_window_layers = *first;
  }
  // Ernie 4.5 MoE and GLM-4 MoE name the experts their own way (transformers maps Ernie's usual
  // names onto its own, and where both are written the usual one is set last).
  const bool ernie_moe = c.architecture == "Ernie4_5_MoeForCausalLM",
             glm4_moe = c.architecture == "Glm4MoeForCausalLM";
  const char* experts_key = glm4_moe                    ? "n_routed_experts"
                            : fields.has("num_experts") ? "num_experts"
                            : ernie_moe                 ? "moe_num_experts"
                                                        : "num_local_experts";
  c.num_experts = non_negative(fields, experts_key, 0);
  const char* per_token_key =
      ernie_moe && !fields.has("num_experts_per_tok") ? "moe_k" : "num_experts_per_tok";
  c.num_experts_per_tok = non_negative(fields, per_token_key, 0);
  c.moe_intermediate_size = non_negative(fields, "moe_intermediate_size", 0);
  c.shared_expert_intermediate_size = non_negative(fields, "shared_expert_intermediate_size", 0);
  c.norm_topk_prob = fields.boolean("norm_topk_prob").value_or(false);
  const char* step_key = ernie_moe ? "moe_layer_interval" : "decoder_sparse_step";
  c.decoder_sparse_step = positive(fields, step_key, fields.integer(step_key).value_or(1));
  if (ernie_moe) {
    c.moe_num_shared_experts = non_negative(fields, "moe_num_shared_experts", 0);
    c.first_sparse_layer = non_negative(fields, "moe_layer_start_index", 0);
    c.last_sparse_layer = fields.integer("moe_layer_end_index").value_or(-1);
    if (c.last_sparse_layer < -1) fields.fail("moe_layer_end_index", "must be -1 or a layer index");
    c.moe_norm_min = fields.number("moe_norm_min").value_or(0.0);
    if (!(c.moe_norm_min >= 0 && std::isfinite(static_cast<float>(c.moe_norm_min))))
      fields.fail("moe_norm_min", "must be a number >= 0 in float's range");
    c.moe_use_aux_free = fields.boolean("moe_use_aux_free").value_or(false);
  }
  if (glm4_moe) {
    c.moe_num_shared_experts = non_negative(fields, "n_shared_experts", 0);
    c.first_sparse_layer = non_negative(fields, "first_k_dense_replace", 0);
    c.num_nextn_predict_layers = non_negative(fields, "num_nextn_predict_layers", 0);
    c.expert_groups = positive(fields, "n_group", fields.integer("n_group").value_or(1));
    c.expert_groups_used = positive(fields, "topk_group", fields.integer("topk_group").value_or(1));
    c.routed_scaling_factor = fields.number("routed_scaling_factor").value_or(1.0);
    if (!(c.routed_scaling_factor > 0) ||
        !std::isnormal(static_cast<float>(c.routed_scaling_factor)))
      fields.fail("routed_scaling_factor", "must be a positive number in float's range");
    c.use_qk_norm = fields.boolean("use_qk_norm").value_or(false);
  }
  if (const nlohmann::json* only = fields.find("mlp_only_layers"); only != nullptr) {
    if (!only->is_array()) fields.fail("mlp_only_layers", "expected a list of layer indices");
    for (const nlohmann::json& layer : *only) {
      if (!layer.is_number_integer() || layer.get<int64_t>() < 0)
        fields.fail("mlp_only_layers",
                    "expected a list of layer indices, got " + io::json_snippet(*only));
      c.mlp_only_layers.push_back(layer.get<int64_t>());
    }
  }
  if (const nlohmann::json* rope = fields.find("no_rope_layers"); rope != nullptr) {
    if (!rope->is_array()) fields.fail("no_rope_layers", "expected a list of 0 and 1");
    for (const nlohmann::json& use : *rope) {
      if (!use.is_number_integer() || (use.get<int64_t>() != 0 && use.get<int64_t>() != 1))
        fields.fail("no_rope_layers", "expected a list of 0 and 1, got " + io::json_snippet(*rope));
      c.no_rope_layers.push_back(use.get<int64_t>());
    }
  }
  if (const auto interval = fields.integer("no_rope_layer_interval"))
    c.no_rope_layer_interval = positive(fields, "no_rope_layer_interval", *interval);
  c.eos_token_ids = token_ids(fields, "eos_token_id");
  const std::vector<int32_t> bos = token_ids(fields, "bos_token_id");
  if (bos.size() > 1) fields.fail("bos_token_id", "expected one token id");
  if (!bos.empty()) c.bos_token_id = bos[0];
  for (const auto& [key, value] : json.items())
    if (!value.is_null()) c.keys.push_back(key);
  c.tie_word_embeddings = fields.boolean("tie_word_embeddings").value_or(false);
  c.attention_bias = fields.boolean("attention_bias")
                         .value_or(c.architecture == "Qwen2ForCausalLM" ||
                                   c.architecture == "Qwen2MoeForCausalLM");
  c.mlp_bias = fields.boolean("mlp_bias").value_or(false);
  // Ernie 4.5: one switch for the biases of every linear module but the head.
  if (c.architecture == "Ernie4_5ForCausalLM" || ernie_moe)
    c.attention_bias = c.mlp_bias = fields.boolean("use_bias").value_or(false);
  c.attn_logit_softcapping = positive_or_off(fields, "attn_logit_softcapping");
  c.final_logit_softcapping = positive_or_off(fields, "final_logit_softcapping");
  c.query_pre_attn_scalar = positive_or_off(fields, "query_pre_attn_scalar");
  // The top-level key (transformers 4) where rope_parameters' sliding set gave none.
  if (const double base = positive_or_off(fields, "rope_local_base_freq");
      c.rope_local_base_freq == 0)
    c.rope_local_base_freq = base;
  if (c.rope_local_base_freq > 0 && !std::isnormal(static_cast<float>(c.rope_local_base_freq)))
    fields.fail("rope_local_base_freq", "must be a positive number in float's range");
  c.embedding_multiplier = positive_or_off(fields, "embedding_multiplier");
  c.attention_multiplier = positive_or_off(fields, "attention_multiplier");
  c.residual_multiplier = positive_or_off(fields, "residual_multiplier");
  c.logits_scaling = positive_or_off(fields, "logits_scaling");
  // EXAONE 4 also writes the pattern as letters, L for a sliding layer and G for a global one.
  const nlohmann::json* pattern = fields.find("sliding_window_pattern");
  if (pattern != nullptr && pattern->is_string() && c.architecture == "Exaone4ForCausalLM") {
    c.sliding_window_layout = pattern->get<std::string>();
    if (c.sliding_window_layout.empty() ||
        c.sliding_window_layout.find_first_not_of("LG") != std::string::npos)
      fields.fail("sliding_window_pattern", "expected a number or letters L and G");
  } else if (const auto every = fields.integer("sliding_window_pattern")) {
    c.sliding_window_pattern = positive(fields, "sliding_window_pattern", *every);
  }
  if (const auto original = fields.integer("original_max_position_embeddings"))
    c.original_max_position_embeddings =
        positive(fields, "original_max_position_embeddings", *original);
  if (const nlohmann::json* types = fields.find("layer_types")) {
    if (!types->is_array()) fields.fail("layer_types", "expected a list of strings");
    for (const nlohmann::json& t : *types) {
      if (!t.is_string()) fields.fail("layer_types", "expected a list of strings");
      c.layer_types.push_back(t.get<std::string>());
    }
  }
  if (c.architecture == "GraniteMoeHybridForCausalLM" ||
      c.architecture == "GraniteMoeSharedForCausalLM")
    c.shared_intermediate_size = non_negative(fields, "shared_intermediate_size", 0);
  if (c.architecture == "GraniteMoeHybridForCausalLM")
    c.position_embedding_type = fields.string("position_embedding_type").value_or("");
  // transformers >= 4.56 writes "dtype"; older versions "torch_dtype".
  c.torch_dtype = fields.string("torch_dtype").value_or(fields.string("dtype").value_or(""));
  return c;
}

ModelConfig ModelConfig::read(const std::string& model_dir) {
  const std::string path = model_dir + "/config.json";
  return parse(io::read_text_file(path, "model config"), path);
}

std::vector<int32_t> read_generation_eos_ids(const std::string& model_dir) {
  const std::string path = model_dir + "/generation_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  const nlohmann::json json =
      io::parse_strict_json(io::read_text_file(path, "generation config"), path);
  const io::JsonFields fields(json, path, "");
  return token_ids(fields, "eos_token_id");
}

}  // namespace dq4
