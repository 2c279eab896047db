// config.json -> Architecture: which Llama-family variant runs and its names (its rope:
// architecture_rope.cc).

#include "dq4/model/architecture.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string_view>

#include "architecture_rules.h"
#include "dq4/io/checkpoint.h"
#include "dq4/kernels/error.h"

namespace dq4 {
namespace {

using model::refuse;

// Config fields of related architectures that change the forward pass in ways dq4 does not
// implement (or implements for their own architecture only, see own_key); a config carrying one
// is refused rather than run wrong.
const std::set<std::string_view>& unsupported_keys() {
  static const std::set<std::string_view> keys = {
      "attn_logit_softcapping", "final_logit_softcapping",
      "query_pre_attn_scalar",  "logits_scaling",
      "embedding_multiplier",   "residual_multiplier",
      "attention_multiplier",   "clip_qkv",
      "no_rope_layers",         "use_qk_norm",
      "attention_chunk_size",   "rope_interleaved",
      "no_rope_layer_interval"};
  return keys;
}

// The keys of that list Gemma's forward pass implements.
bool gemma_key(std::string_view key) {
  return key == "attn_logit_softcapping" || key == "final_logit_softcapping" ||
         key == "query_pre_attn_scalar";
}

// The keys of that list SmolLM3's forward pass implements.
bool smollm3_key(std::string_view key) {
  return key == "no_rope_layers" || key == "no_rope_layer_interval";
}

// The keys of that list Granite's forward pass implements.
bool granite_key(std::string_view key) {
  return key == "embedding_multiplier" || key == "attention_multiplier" ||
         key == "residual_multiplier" || key == "logits_scaling";
}

// The key the activation was read from: Gemma's hidden_activation where given, else hidden_act.
const char* activation_key(const ModelConfig& c) {
  const bool gemma_key_given =
      std::find(c.keys.begin(), c.keys.end(), "hidden_activation") != c.keys.end();
  return gemma_key_given ? "hidden_activation" : "hidden_act";
}

// layer_types, where given: per layer whether it is a sliding-window one; empty when absent.
std::vector<bool> sliding_layers(const ModelConfig& c, const std::string& file) {
  if (c.layer_types.empty()) return {};
  if (static_cast<int64_t>(c.layer_types.size()) != c.num_hidden_layers)
    refuse(file, "layer_types",
           "needs one entry per layer (" + std::to_string(c.num_hidden_layers) + ")");
  std::vector<bool> sliding;
  for (const std::string& t : c.layer_types) {
    if (t != "sliding_attention" && t != "full_attention")
      refuse(file, "layer_types", "'" + t + "' is not sliding_attention or full_attention");
    sliding.push_back(t == "sliding_attention");
  }
  return sliding;
}

// SmolLM3: the layers that rotate q and k, from no_rope_layers (1: rotates; at least one entry
// per layer) or else all but every no_rope_layer_interval-th (4 by default), as transformers.
void configure_nope_layers(const ModelConfig& c, const std::string& file, Architecture& a) {
  const auto layers = static_cast<size_t>(c.num_hidden_layers);
  if (!c.no_rope_layers.empty() && c.no_rope_layers.size() < layers)
    refuse(file, "no_rope_layers",
           "needs an entry for each of the " + std::to_string(layers) + " layers");
  const int64_t interval = c.no_rope_layer_interval > 0 ? c.no_rope_layer_interval : 4;
  for (size_t i = 0; i < layers; ++i)
    a.layer_rope[i] = c.no_rope_layers.empty() ? (static_cast<int64_t>(i) + 1) % interval != 0
                                               : c.no_rope_layers[i] == 1;
}

// Gemma 2 / 3: the per-layer windows, the attention scale, soft-caps and the local rope base.
// `sliding`: layer_types' sliding layers (sliding_layers), empty when absent.
void configure_gemma(const ModelConfig& c, const std::string& file, bool gemma3,
                     const std::vector<bool>& sliding, Architecture& a) {
  a.gemma = true;
  a.post_norms = true;
  if (c.hidden_act != "gelu_pytorch_tanh")
    refuse(file, activation_key(c),
           "'" + c.hidden_act + "' is not supported for Gemma (dq4 runs gelu_pytorch_tanh)");
  a.activation = Activation::gelu_tanh;
  a.qk_norm = gemma3;
  const double scalar =
      c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : static_cast<double>(c.head_dim);
  a.attention_scale = static_cast<float>(1.0 / std::sqrt(scalar));
  a.attention_softcap = static_cast<float>(c.attn_logit_softcapping);
  a.final_softcap = static_cast<float>(c.final_logit_softcapping);
  const int64_t pattern = c.sliding_window_pattern > 0 ? c.sliding_window_pattern : 6;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    // transformers, without layer_types: Gemma 2's even layers are local; Gemma 3's all but
    // every pattern-th.
    const bool local = !sliding.empty() ? sliding[static_cast<size_t>(i)]
                       : gemma3         ? (i + 1) % pattern != 0
                                        : i % 2 == 0;
    a.layer_window[static_cast<size_t>(i)] = local ? c.sliding_window : 0;
  }
  if (gemma3) a.local_rope_theta = c.rope_local_base_freq > 0 ? c.rope_local_base_freq : 10000.0;
  // Gemma ties its head unless the config says otherwise.
  const bool tie_given =
      std::find(c.keys.begin(), c.keys.end(), "tie_word_embeddings") != c.keys.end();
  if (!tie_given) a.config.tie_word_embeddings = true;
}

// OLMo 3: windows on layer_types' sliding layers (transformers without them: all but every fourth
// layer), which rotate by the plain rope at rope_theta (or rope_parameters' sliding base); the
// configured scaling applies to the full-attention layers only.
void configure_olmo3(const ModelConfig& c, const std::string& file,
                     const std::vector<bool>& sliding, Architecture& a) {
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const bool local = !sliding.empty() ? sliding[static_cast<size_t>(i)] : (i + 1) % 4 != 0;
    if (local && c.sliding_window <= 0)
      refuse(file, "sliding_window", "OLMo 3's sliding_attention layers need a window");
    a.layer_window[static_cast<size_t>(i)] = local ? c.sliding_window : 0;
  }
  a.local_rope_theta = c.rope_local_base_freq > 0 ? c.rope_local_base_freq : c.rope_theta;
}

// EXAONE 4: windows on layer_types' sliding layers, else as sliding_window_pattern says (every
// n-th layer global, 4 by default; or letters repeated, L sliding and G global), none when
// sliding_window is null; with a window only the sliding layers rotate (its global layers are
// NoPE), without one every layer does.
void configure_exaone4(const ModelConfig& c, const std::string& file,
                       const std::vector<bool>& sliding, Architecture& a) {
  const std::string& letters = c.sliding_window_layout;
  const int64_t every = c.sliding_window_pattern > 0 ? c.sliding_window_pattern : 4;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const auto u = static_cast<size_t>(i);
    const bool local = !sliding.empty()        ? sliding[u]
                       : c.sliding_window == 0 ? false
                       : !letters.empty()      ? letters[u % letters.size()] == 'L'
                                               : (i + 1) % every != 0;
    if (local && c.sliding_window == 0)
      refuse(file, "sliding_window", "EXAONE 4's sliding_attention layers need a window");
    a.layer_window[u] = local ? c.sliding_window : 0;
    a.layer_rope[u] = local || c.sliding_window == 0;
  }
}

// Granite 4's models without mamba layers (GraniteMoeHybrid, every layer_types entry
// "attention"): Granite's scalars, its shared_mlp (gate and up fused) as the MLP or beside the
// experts, rotary embeddings where position_embedding_type says "rope" (else none).
void configure_granite_hybrid(const ModelConfig& c, const std::string& file, Architecture& a) {
  if (c.layer_types.empty())
    refuse(file, "layer_types",
           "absent, so every layer is a mamba layer, which dq4 does not run (it runs Granite 4's "
           "attention-only models)");
  if (static_cast<int64_t>(c.layer_types.size()) != c.num_hidden_layers)
    refuse(file, "layer_types",
           "needs one entry per layer (" + std::to_string(c.num_hidden_layers) + ")");
  for (size_t i = 0; i < c.layer_types.size(); ++i)
    if (c.layer_types[i] != "attention")
      refuse(file, "layer_types",
             "layer " + std::to_string(i) + " is '" + c.layer_types[i] +
                 "': dq4 runs attention layers only (Granite 4's models without mamba layers)");
  if (c.shared_intermediate_size <= 0)
    refuse(file, "shared_intermediate_size", "missing or not positive");
  // Beside experts, the shared MLP; without them, the MLP (intermediate_size is the experts').
  if (c.num_experts > 0)
    a.shared_expert_intermediate = c.shared_intermediate_size;
  else
    a.config.intermediate_size = c.shared_intermediate_size;
  if (c.position_embedding_type != "rope" && !c.position_embedding_type.empty())
    refuse(file, "position_embedding_type",
           "'" + c.position_embedding_type + "' is not supported (dq4 runs \"rope\" and none)");
  const bool rotates = c.position_embedding_type == "rope";
  a.layer_rope.assign(static_cast<size_t>(c.num_hidden_layers), rotates);
}

// Granite's mixtures (GraniteMoe, GraniteMoeShared, GraniteMoeHybrid with experts): each layer's
// experts stacked in two tensors per block ([experts, 2 x intermediate, hidden] gate and up,
// [experts, hidden, intermediate] down), its router block_sparse_moe.router.layer.
bool granite_mixture(const ModelConfig& c) {
  return c.architecture == "GraniteMoeForCausalLM" ||
         c.architecture == "GraniteMoeSharedForCausalLM" ||
         (c.architecture == "GraniteMoeHybridForCausalLM" && c.num_experts > 0);
}

// The config keys of a family's expert counts.
struct ExpertKeys {
  const char* experts;
  const char* per_token;
};

ExpertKeys expert_keys(const std::string& architecture) {
  if (architecture == "MixtralForCausalLM" || architecture.starts_with("Granite"))
    return {"num_local_experts", "num_experts_per_tok"};
  if (architecture == "Ernie4_5_MoeForCausalLM") return {"moe_num_experts", "moe_k"};
  if (architecture == "Glm4MoeForCausalLM") return {"n_routed_experts", "num_experts_per_tok"};
  return {"num_experts", "num_experts_per_tok"};
}

// GLM-4 MoE's expert groups, as transformers can run them (the top two of each group scored).
void check_expert_groups(const ModelConfig& c, const std::string& file, ExpertRouting& r) {
  if (c.num_experts % c.expert_groups != 0 ||
      (c.expert_groups > 1 && c.num_experts / c.expert_groups < 2))
    refuse(file, "n_group", "must divide n_routed_experts into groups of 2 or more");
  if (c.expert_groups_used > c.expert_groups)
    refuse(file, "topk_group", "must be between 1 and n_group");
  if (c.num_experts_per_tok > c.expert_groups_used * (c.num_experts / c.expert_groups))
    refuse(file, "num_experts_per_tok", "more than the experts of topk_group groups");
  r.groups = c.expert_groups;
  r.groups_used = c.expert_groups_used;
}

// The mixture-of-experts settings of Qwen3-MoE, Qwen2-MoE, Mixtral, OLMoE, Ernie 4.5 MoE and GLM-4
// MoE.
void check_experts(const ModelConfig& c, const std::string& file, Architecture& a) {
  const std::string& arch = c.architecture;
  const bool mixtral = arch == "MixtralForCausalLM", ernie = arch == "Ernie4_5_MoeForCausalLM",
             glm = arch == "Glm4MoeForCausalLM";
  const ExpertKeys keys = expert_keys(arch);
  if (c.num_experts <= 0 || c.num_experts > kMaxExperts)
    refuse(file, keys.experts, "must be between 1 and " + std::to_string(kMaxExperts));
  if (c.num_experts_per_tok <= 0 || c.num_experts_per_tok > c.num_experts)
    refuse(file, keys.per_token,
           "must be between 1 and " + std::string(keys.experts) + " (" +
               std::to_string(c.num_experts) + ")");
  a.experts = c.num_experts;
  a.experts_per_token = c.num_experts_per_tok;
  ExpertRouting& r = a.routing;
  // Mixtral and Granite always renormalize (their softmax over the top-k logits), Ernie 4.5 by the
  // sum or moe_norm_min, whichever is larger; the others as configured.
  r.renormalize = mixtral || ernie || granite_mixture(c) || c.norm_topk_prob;
  if (ernie) {
    r.norm_min = static_cast<float>(c.moe_norm_min);
    r.bias_required = c.moe_use_aux_free;
  }
  if (glm) {
    r.sigmoid = true;
    r.norm_epsilon = 1e-20f;
    r.scale = static_cast<float>(c.routed_scaling_factor);
    r.bias_required = true;
    check_expert_groups(c, file, r);
  }
  a.expert_intermediate = c.intermediate_size;
  if (arch.starts_with("Qwen") || ernie || glm) {
    if (c.moe_intermediate_size <= 0)
      refuse(file, "moe_intermediate_size", "missing or not positive");
    a.expert_intermediate = c.moe_intermediate_size;
  }
  if (arch == "Qwen2MoeForCausalLM") {
    if (c.shared_expert_intermediate_size <= 0)
      refuse(file, "shared_expert_intermediate_size", "missing or not positive");
    a.shared_expert_intermediate = c.shared_expert_intermediate_size;
    a.shared_expert_gated = true;
  }
  if (ernie || glm) {
    // One MLP as wide as the shared experts together, added ungated.
    if (c.moe_num_shared_experts > (int64_t{1} << 30) / c.moe_intermediate_size)
      refuse(file, ernie ? "moe_num_shared_experts" : "n_shared_experts",
             "too many for moe_intermediate_size");
    a.shared_expert_intermediate = c.moe_num_shared_experts * c.moe_intermediate_size;
  }
  if (ernie && c.mlp_bias) refuse(file, "use_bias", "biases in a mixture of experts are not run");
  // GraniteMoeShared's shared MLP, where its width is not 0 (GraniteMoeHybrid's: see
  // configure_granite_hybrid).
  if (arch == "GraniteMoeSharedForCausalLM")
    a.shared_expert_intermediate = c.shared_intermediate_size;
}

}  // namespace

Architecture Architecture::from_config(const ModelConfig& c, const std::string& file) {
  Architecture a;
  a.config = c;
  a.context_length = c.max_position_embeddings;
  const std::string& arch = c.architecture;
  const bool qwen2_moe = arch == "Qwen2MoeForCausalLM", qwen3_moe = arch == "Qwen3MoeForCausalLM",
             mixtral = arch == "MixtralForCausalLM", olmoe = arch == "OlmoeForCausalLM";
  // Mistral 3 (Mistral Small 3.x, Ministral 3): the text model of the multimodal checkpoint, or
  // Ministral 3's alone.
  const bool mistral3 =
      arch == "Mistral3ForConditionalGeneration" || arch == "Ministral3ForCausalLM";
  const bool llama = arch == "LlamaForCausalLM",
             mistral = arch == "MistralForCausalLM" || mixtral || mistral3,
             qwen2 = arch == "Qwen2ForCausalLM" || qwen2_moe,
             qwen3 = arch == "Qwen3ForCausalLM" || qwen3_moe, gemma2 = arch == "Gemma2ForCausalLM",
             gemma3 = arch == "Gemma3ForCausalLM" || arch == "Gemma3ForConditionalGeneration",
             phi3 = arch == "Phi3ForCausalLM",
             granite_hybrid = arch == "GraniteMoeHybridForCausalLM",
             granite_moe = arch == "GraniteMoeForCausalLM" || arch == "GraniteMoeSharedForCausalLM",
             granite = arch == "GraniteForCausalLM" || granite_hybrid || granite_moe,
             smollm3 = arch == "SmolLM3ForCausalLM", olmo3 = arch == "Olmo3ForCausalLM",
             olmo2 = arch == "Olmo2ForCausalLM" || olmo3, exaone4 = arch == "Exaone4ForCausalLM",
             ernie_moe = arch == "Ernie4_5_MoeForCausalLM",
             ernie = arch == "Ernie4_5ForCausalLM" || ernie_moe, glm4 = arch == "Glm4ForCausalLM",
             glm4_moe = arch == "Glm4MoeForCausalLM";
  const bool moe =
      qwen2_moe || qwen3_moe || mixtral || olmoe || ernie_moe || glm4_moe || granite_mixture(c);
  if (!llama && !mistral && !qwen2 && !qwen3 && !olmoe && !gemma2 && !gemma3 && !phi3 && !granite &&
      !smollm3 && !olmo2 && !exaone4 && !ernie && !glm4 && !glm4_moe)
    refuse(file, "architectures",
           "'" + arch +
               "' is not supported (dq4 runs LlamaForCausalLM, MistralForCausalLM, "
               "Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, "
               "MixtralForCausalLM, OlmoeForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, "
               "Gemma3ForConditionalGeneration (text), Phi3ForCausalLM, GraniteForCausalLM, "
               "SmolLM3ForCausalLM, Olmo2ForCausalLM, Olmo3ForCausalLM, Exaone4ForCausalLM, "
               "Mistral3ForConditionalGeneration (text), Ministral3ForCausalLM, "
               "Ernie4_5ForCausalLM, Ernie4_5_MoeForCausalLM, Glm4ForCausalLM, "
               "Glm4MoeForCausalLM, GraniteMoeForCausalLM, GraniteMoeSharedForCausalLM, "
               "GraniteMoeHybridForCausalLM (attention layers only))");
  if (arch == "Mistral3ForConditionalGeneration" && c.model_type != "mistral" &&
      c.model_type != "ministral3")
    refuse(file, "text_config.model_type",
           "'" + c.model_type + "' is not supported (dq4 runs mistral and ministral3)");
  const auto own_key = [&](std::string_view key) {
    return ((gemma2 || gemma3) && gemma_key(key)) || (granite && granite_key(key)) ||
           (smollm3 && smollm3_key(key)) || (glm4_moe && key == "use_qk_norm");
  };
  for (const std::string& key : c.keys) {
    if (unsupported_keys().contains(key) && !own_key(key))
      refuse(file, key, "changes the forward pass in a way dq4 does not implement");
    // Granite 4 writes num_local_experts 0 in its dense models.
    if (granite_hybrid && key == "num_local_experts") continue;
    if (!moe && (key == "num_experts" || key == "num_local_experts" || key == "moe_num_experts" ||
                 key == "n_routed_experts" || key == "moe_intermediate_size" ||
                 key == "shared_expert_intermediate_size"))
      refuse(file, key, "experts are run for the mixture-of-experts architectures only");
  }
  if (moe) check_experts(c, file, a);
  if (!gemma2 && !gemma3 && c.hidden_act != "silu")
    refuse(file, activation_key(c), "'" + c.hidden_act + "' is not supported (dq4 runs silu)");
  model::check_rope(c, file, a);
  if (c.rope_scaling.llama_4_scaling_beta > 0) {
    if (!mistral3 || c.model_type != "ministral3")
      refuse(file, "llama_4_scaling_beta", "scales the queries of Ministral 3 models only");
    if (c.rope_scaling.original_max_position_embeddings <= 0)
      refuse(file, "original_max_position_embeddings",
             "llama_4_scaling_beta needs the original context");
    if (!std::isfinite(static_cast<float>(c.rope_scaling.llama_4_scaling_beta)))
      refuse(file, "llama_4_scaling_beta", "out of the range of a float");
    a.query_scale_beta = c.rope_scaling.llama_4_scaling_beta;
    a.query_scale_context = c.rope_scaling.original_max_position_embeddings;
  }
  if (!gemma3 && !olmo3 && c.rope_local_base_freq > 0 && c.rope_local_base_freq != c.rope_theta)
    refuse(file, "rope_local_base_freq",
           "a rope base of the sliding layers' own runs for Gemma 3 and OLMo 3 only");
  a.qk_norm = qwen3 || olmoe || olmo2 || exaone4 || (glm4_moe && c.use_qk_norm);
  a.qk_norm_whole = olmoe || olmo2;
  a.post_norms = olmo2 || exaone4 || glm4;
  a.rope_interleaved = ernie || glm4;
  // Qwen2's q/k/v always have biases and its o_proj never has one, whatever attention_bias says.
  a.qkv_bias = qwen2 || c.attention_bias;
  a.o_bias = !qwen2 && !glm4 && !glm4_moe && c.attention_bias;
  a.attention_scale = static_cast<float>(1.0 / std::sqrt(static_cast<float>(c.head_dim)));
  if (granite) {
    // transformers' GraniteConfig defaults every multiplier to 1 (the attention's too).
    const auto or_one = [&](const char* key, double v) {
      const auto f = static_cast<float>(v > 0 ? v : 1.0);
      if (!std::isfinite(f) || f == 0) refuse(file, key, "out of the range of a float");
      return f;
    };
    a.attention_scale = or_one("attention_multiplier", c.attention_multiplier);
    a.embedding_multiplier = or_one("embedding_multiplier", c.embedding_multiplier);
    a.residual_multiplier = or_one("residual_multiplier", c.residual_multiplier);
    a.logits_divisor = or_one("logits_scaling", c.logits_scaling);
  }
  // Llama's modeling code ignores sliding_window; Mistral's and Phi-3's apply it to every layer;
  // Qwen's (with use_sliding_window) to the sliding_attention layers of layer_types, or without
  // them to the layers from max_window_layers on. Newer transformers write layer_types into every
  // Qwen config, all full_attention when the window is off.
  if (mistral || phi3) a.sliding_window = c.sliding_window;
  a.layer_window.assign(static_cast<size_t>(c.num_hidden_layers), a.sliding_window);
  // Granite 4's layer_types name attention and mamba layers (configure_granite_hybrid).
  const std::vector<bool> sliding = granite_hybrid ? std::vector<bool>{} : sliding_layers(c, file);
  if (qwen2 || qwen3 || smollm3) {
    const int64_t first = c.max_window_layers >= 0 ? c.max_window_layers : 28;
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
      const bool windowed = !sliding.empty() ? sliding[static_cast<size_t>(i)] : i >= first;
      a.layer_window[static_cast<size_t>(i)] = windowed ? c.sliding_window : 0;
    }
  } else if (!gemma2 && !gemma3 && !olmo3 && !exaone4 &&
             std::find(sliding.begin(), sliding.end(), true) != sliding.end()) {
    refuse(file, "layer_types",
           "sliding_attention layers run for Gemma, Qwen, OLMo 3 and EXAONE 4 only");
  }
  a.layer_rope.assign(static_cast<size_t>(c.num_hidden_layers), true);
  if (smollm3) configure_nope_layers(c, file, a);
  if (granite_hybrid) configure_granite_hybrid(c, file, a);
  if (gemma2 || gemma3) configure_gemma(c, file, gemma3, sliding, a);
  if (olmo3) configure_olmo3(c, file, sliding, a);
  if (exaone4) configure_exaone4(c, file, sliding, a);
  if (arch == "Gemma3ForConditionalGeneration" || arch == "Mistral3ForConditionalGeneration")
    a.name_text_model("language_model.model.", "language_model.lm_head");
  else
    a.name_text_model("model.", "lm_head");
  return a;
}

void Architecture::name_text_model(const std::string& text_prefix, const std::string& head_name) {
  prefix = text_prefix;
  embedding = prefix + "embed_tokens.weight";
  final_norm = prefix + "norm.weight";
  if (!config.tie_word_embeddings)
    head = LinearModule{head_name, config.vocab_size, config.hidden_size, false};
}

Architecture Architecture::read(const std::string& model_dir) {
  const ModelConfig config = ModelConfig::read(model_dir);
  return read(config, Checkpoint::open_dir(model_dir));
}

Architecture Architecture::read(const ModelConfig& config, const Checkpoint& checkpoint) {
  check_layer_count(config, checkpoint);
  Architecture a = from_config(config, checkpoint.dir() + "/config.json");
  // Multimodal checkpoints: transformers before 4.52 wrote the text model under
  // language_model.model. (its head language_model.lm_head), later versions under
  // model.language_model. (its head lm_head); the checkpoint's names tell which.
  if (a.prefix == "language_model.model." &&
      checkpoint.find("model.language_model.embed_tokens.weight") != nullptr)
    a.name_text_model("model.language_model.", "lm_head");
  // Layers past the config's count would be left out silently (vLLM and llama.cpp refuse them);
  // GLM-4 MoE's multi-token-prediction layers follow the decoder's and are not run.
  const int64_t stored = config.num_hidden_layers + config.num_nextn_predict_layers;
  const std::string past = a.prefix + "layers." + std::to_string(stored) + ".";
  if (checkpoint.has_prefix(past))
    refuse(checkpoint.dir() + "/config.json",
           config.num_nextn_predict_layers > 0 ? "num_nextn_predict_layers" : "num_hidden_layers",
           std::to_string(stored) + " layers, but the checkpoint also holds " + past + "*");
  if (a.experts > 0) a.check_expert_count(checkpoint);
  return a;
}

std::vector<std::string> unused_tensors(const Checkpoint& checkpoint) {
  std::vector<std::string> unused;
  for (std::string& name : checkpoint.unread())
    if (!name.ends_with("rotary_emb.inv_freq")) unused.push_back(std::move(name));
  return unused;
}

void Architecture::check_layer_count(const ModelConfig& config, const Checkpoint& checkpoint) {
  // Per-layer settings and names are made for every layer the config counts, so a count the
  // checkpoint does not hold is refused first; whatever the text model's prefix, the last
  // layer's tensors have "layers.<last>." in their names.
  const std::string last = "layers." + std::to_string(config.num_hidden_layers - 1) + ".";
  for (const std::string& name : checkpoint.names())
    if (name.find(last) != std::string::npos) return;
  refuse(checkpoint.dir() + "/config.json", "num_hidden_layers",
         std::to_string(config.num_hidden_layers) +
             " layers, but the checkpoint has no tensor of the last (a name with " + last + ")");
}

void Architecture::check_expert_count(const Checkpoint& checkpoint) const {
  // Every expert's modules are named per layer, so a count the checkpoint does not hold is
  // refused before those names are made.
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    if (!sparse_layer(i)) continue;
    const char* key = expert_keys(config.architecture).experts;
    if (granite_mixture(config)) {  // stacked: the down tensors' first dimension
      const std::string down = sparse_block(i) + "output_linear.";
      const TensorView* t = checkpoint.find(down + "weight");
      if (t == nullptr) t = checkpoint.find(down + "weight_packed");
      if (t != nullptr && (t->shape.size() != 3 || t->shape[0] != experts))
        refuse(checkpoint.dir() + "/config.json", key,
               std::to_string(experts) + " experts, but the checkpoint's '" + t->name + "' is " +
                   t->shape_string());
      return;
    }
    const std::string last = sparse_block(i) + "experts." + std::to_string(experts - 1) + ".";
    if (!checkpoint.has_prefix(last))
      refuse(checkpoint.dir() + "/config.json", key,
             std::to_string(experts) + " experts, but the checkpoint has no tensor named " + last +
                 "*");
    return;
  }
}

std::string Architecture::sparse_block(int64_t index) const {
  const bool block = config.architecture == "MixtralForCausalLM" || granite_mixture(config);
  return prefix + "layers." + std::to_string(index) + "." + (block ? "block_sparse_moe." : "mlp.");
}

bool Architecture::sparse_layer(int64_t index) const {
  if (experts == 0) return false;
  for (int64_t dense : config.mlp_only_layers)
    if (dense == index) return false;
  const int64_t last = config.last_sparse_layer;
  return (index + 1) % config.decoder_sparse_step == 0 && index >= config.first_sparse_layer &&
         (last < 0 || index <= last);
}

LayerModules Architecture::layer(int64_t index) const {
  const ModelConfig& c = config;
  const int64_t q_features = c.num_attention_heads * c.head_dim;
  const int64_t kv_features = c.num_key_value_heads * c.head_dim;
  const std::string prefix = this->prefix + "layers." + std::to_string(index) + ".";
  LayerModules m;
  const bool glm4 = config.architecture == "Glm4ForCausalLM";
  const bool inputs_raw = post_norms && !gemma && !glm4;  // OLMo, EXAONE 4: no input norms
  if (!inputs_raw) m.input_norm = prefix + "input_layernorm.weight";
  m.post_attention_norm = prefix + "post_attention_layernorm.weight";
  if (gemma) m.pre_feedforward_norm = prefix + "pre_feedforward_layernorm.weight";
  if (post_norms) m.post_feedforward_norm = prefix + "post_feedforward_layernorm.weight";
  if (glm4) {  // Gemma's four norms under other names, post_attention_layernorm the MLP's input
    m.post_attention_norm = prefix + "post_self_attn_layernorm.weight";
    m.pre_feedforward_norm = prefix + "post_attention_layernorm.weight";
    m.post_feedforward_norm = prefix + "post_mlp_layernorm.weight";
  }
  if (qk_norm) {
    m.q_norm = prefix + "self_attn.q_norm.weight";
    m.k_norm = prefix + "self_attn.k_norm.weight";
  }
  const bool bias = qkv_bias;
  m.attention_output = {prefix + "self_attn.o_proj", c.hidden_size, q_features, o_bias};
  // Phi-3 and GLM-4 fuse gate and up rows (gate first) in the checkpoint: one module (GLM-4's
  // never with biases).
  const auto fused_mlp = [&](bool with_bias) {
    m.mlp_input = {
        {prefix + "mlp.gate_up_proj", 2 * c.intermediate_size, c.hidden_size, with_bias}};
    m.mlp_output = {prefix + "mlp.down_proj", c.hidden_size, c.intermediate_size, with_bias};
    return m;
  };
  if (config.architecture == "Phi3ForCausalLM") {
    // q, k, v rows fused too.
    m.attention_input = {
        {prefix + "self_attn.qkv_proj", q_features + 2 * kv_features, c.hidden_size, bias}};
    return fused_mlp(c.mlp_bias);
  }
  m.attention_input = {{prefix + "self_attn.q_proj", q_features, c.hidden_size, bias},
                       {prefix + "self_attn.k_proj", kv_features, c.hidden_size, bias},
                       {prefix + "self_attn.v_proj", kv_features, c.hidden_size, bias}};
  if (glm4) return fused_mlp(false);
  // Granite 4's and GraniteMoeShared's shared_mlp (gate rows first): the MLP, or beside the
  // experts.
  const auto shared_mlp = [&](int64_t inter) {
    m.mlp_input = {{prefix + "shared_mlp.input_linear", 2 * inter, c.hidden_size, false}};
    m.mlp_output = {prefix + "shared_mlp.output_linear", c.hidden_size, inter, false};
  };
  if (granite_mixture(c)) {
    const std::string moe = sparse_block(index);
    m.router = {{moe + "router.layer", experts, c.hidden_size, false}};
    for (int64_t e = 0; e < experts; ++e) {
      ExpertModules x;
      x.input = {{moe + "input_linear", 2 * expert_intermediate, c.hidden_size, false, experts, e}};
      x.output = {moe + "output_linear", c.hidden_size, expert_intermediate, false, experts, e};
      m.experts.push_back(std::move(x));
    }
    if (shared_expert_intermediate > 0) shared_mlp(shared_expert_intermediate);
    return m;
  }
  if (config.architecture == "GraniteMoeHybridForCausalLM") {
    shared_mlp(c.intermediate_size);
    return m;
  }
  const auto mlp = [&](const std::string& p, int64_t inter, std::vector<LinearModule>& input,
                       LinearModule& output) {
    input = {{p + "gate_proj", inter, c.hidden_size, c.mlp_bias},
             {p + "up_proj", inter, c.hidden_size, c.mlp_bias}};
    output = {p + "down_proj", c.hidden_size, inter, c.mlp_bias};
  };
  if (!sparse_layer(index)) {
    mlp(prefix + "mlp.", c.intermediate_size, m.mlp_input, m.mlp_output);
    return m;
  }
  const bool mixtral = c.architecture == "MixtralForCausalLM";
  const std::string moe = sparse_block(index);
  m.router = {{moe + "gate", experts, c.hidden_size, false}};
  for (int64_t e = 0; e < experts; ++e) {
    const std::string p = moe + "experts." + std::to_string(e) + ".";
    ExpertModules x;
    if (mixtral) {
      x.input = {{p + "w1", expert_intermediate, c.hidden_size, false},
                 {p + "w3", expert_intermediate, c.hidden_size, false}};
      x.output = {p + "w2", c.hidden_size, expert_intermediate, false};
    } else {
      mlp(p, expert_intermediate, x.input, x.output);
    }
    m.experts.push_back(std::move(x));
  }
  if (shared_expert_intermediate > 0 && shared_expert_gated) {
    mlp(moe + "shared_expert.", shared_expert_intermediate, m.mlp_input, m.mlp_output);
    m.router.push_back({moe + "shared_expert_gate", 1, c.hidden_size, false});
  } else if (shared_expert_intermediate > 0) {
    mlp(moe + "shared_experts.", shared_expert_intermediate, m.mlp_input, m.mlp_output);
  }
  if (c.architecture == "Ernie4_5_MoeForCausalLM")
    m.router_bias = moe + "moe_statics.e_score_correction_bias";
  if (c.architecture == "Glm4MoeForCausalLM") m.router_bias = moe + "gate.e_score_correction_bias";
  return m;
}

std::vector<std::vector<LinearModule>> Architecture::linear_groups() const {
  std::vector<std::vector<LinearModule>> groups;
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    LayerModules m = layer(i);
    groups.push_back(std::move(m.attention_input));
    groups.push_back({std::move(m.attention_output)});
    if (!m.router.empty()) groups.push_back(std::move(m.router));
    for (ExpertModules& e : m.experts) {
      groups.push_back(std::move(e.input));
      groups.push_back({std::move(e.output)});
    }
    if (!m.mlp_input.empty()) {
      groups.push_back(std::move(m.mlp_input));
      groups.push_back({std::move(m.mlp_output)});
    }
  }
  if (head) groups.push_back({*head});
  return groups;
}

std::vector<LinearModule> Architecture::linear_modules() const {
  std::vector<LinearModule> modules;
  for (auto& group : linear_groups())
    for (auto& m : group) modules.push_back(std::move(m));
  return modules;
}

}  // namespace dq4
