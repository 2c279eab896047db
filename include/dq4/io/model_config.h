#pragma once
// The architecture part of a Hugging Face config.json as the file says it: shapes, rope, window,
// token ids. Which architectures run, and what their modules are called, is decided by the model
// layer (dq4/architecture.h).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dq4 {

// config.json's rope_scaling (or transformers 5's rope_parameters) as written; which types run is
// decided by the model layer (src/model/architecture.cc).
struct RopeScaling {
  std::string type;  // "" when absent or null; else rope_type (or the legacy "type")
  double factor = 1.0;
  bool factor_given = false;                      // yarn: else max_position_embeddings / original
  double low_freq_factor = 1.0;                   // llama3
  double high_freq_factor = 4.0;                  // llama3
  int64_t original_max_position_embeddings = 0;   // llama3, yarn; 0 when absent
  std::vector<double> short_factor, long_factor;  // longrope (Phi-3): per rotary frequency
  // yarn: the attention factor (0: from the factor, or from mscale / mscale_all_dim where both
  // are given and nonzero), the rotations that bound the ramp between the extrapolated and the
  // interpolated frequencies, and whether those bounds are rounded to whole frequencies.
  double attention_factor = 0, mscale = 0, mscale_all_dim = 0;
  double beta_fast = 32, beta_slow = 1;
  bool truncate = true;
  // Ministral 3: queries scaled by 1 + beta ln(1 + floor(position / original context)); 0 = none.
  double llama_4_scaling_beta = 0;
  std::vector<std::string> other_keys;  // keys dq4 does not read (the model layer refuses them)
};

struct ModelConfig {
  std::string architecture;  // "LlamaForCausalLM"
  std::string model_type;    // "llama"
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // hidden_size / num_attention_heads unless the file says otherwise
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  bool mlp_bias = false;
  std::string torch_dtype;  // "bfloat16", "float16", "float32" or "" when absent
  RopeScaling rope_scaling;
  std::string hidden_act = "silu";
  // Sliding-window attention in tokens (Mistral's sliding_window; Qwen2's only with
  // use_sliding_window); 0 = none.
  int64_t sliding_window = 0;
  int64_t max_window_layers = -1;  // Qwen: the first layer with the window; -1 when absent
  double partial_rotary_factor = 1.0;
  // Mixture of experts (0 experts: a dense model). The fields as the families name them:
  // num_experts (Qwen, OLMoE) or num_local_experts (Mixtral); 0 / empty where absent.
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;            // Qwen: the experts' (others: intermediate_size)
  int64_t shared_expert_intermediate_size = 0;  // Qwen2-MoE's shared expert
  bool norm_topk_prob = false;                  // renormalize the top-k routing weights
  // Qwen (Ernie 4.5: moe_layer_interval): every step-th layer is sparse.
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;  // Qwen: layers kept dense
  // Ernie 4.5 MoE (moe_num_experts and moe_k read into the fields above) and GLM-4 MoE
  // (n_routed_experts): the shared experts, one MLP of that many times moe_intermediate_size
  // (moe_num_shared_experts, n_shared_experts); the range of sparse layers (moe_layer_start_index
  // or first_k_dense_replace, moe_layer_end_index; -1 = to the last layer). Ernie's routing
  // weights' least divisor (moe_norm_min) and whether its router's selection bias must be in the
  // checkpoint (moe_use_aux_free). GLM's expert groups (n_group) of which a token's experts come
  // from the best topk_group, the routing weights' factor (routed_scaling_factor), per-head q/k
  // norms (use_qk_norm) and the multi-token-prediction layers stored after the decoder's
  // (num_nextn_predict_layers), which are not run.
  int64_t moe_num_shared_experts = 0;
  int64_t first_sparse_layer = 0, last_sparse_layer = -1;
  double moe_norm_min = 0;
  bool moe_use_aux_free = false;
  int64_t expert_groups = 1, expert_groups_used = 1;
  double routed_scaling_factor = 1.0;
  bool use_qk_norm = false;
  int64_t num_nextn_predict_layers = 0;

  std::vector<int32_t> eos_token_ids;  // eos_token_id, a number or a list; may be empty
  int32_t bos_token_id = -1;           // -1 when absent
  std::vector<std::string> keys;       // every top-level key with a non-null value, sorted

  // Gemma 2 / 3, Phi-3 and Granite; 0 or empty when absent.
  double attn_logit_softcapping = 0, final_logit_softcapping = 0;
  double query_pre_attn_scalar = 0;
  double rope_local_base_freq = 0;     // Gemma 3's local (sliding-window) layers
  int64_t sliding_window_pattern = 0;  // Gemma 3, EXAONE 4: every n-th layer is global
  std::string sliding_window_layout;   // EXAONE 4's pattern as text ("LLLG")
  // Per layer "sliding_attention" / "full_attention" (Granite 4: "attention" / "mamba").
  std::vector<std::string> layer_types;
  int64_t original_max_position_embeddings = 0;  // Phi-3 (longrope's switch), top level
  // Granite's scalars: embeddings times embedding_multiplier, attention scores times
  // attention_multiplier, each layer's attention and MLP outputs times residual_multiplier before
  // the residual add, logits divided by logits_scaling; 0 when absent.
  double embedding_multiplier = 0, attention_multiplier = 0, residual_multiplier = 0;
  double logits_scaling = 0;
  // SmolLM3: per layer 1 when it rotates q and k, 0 when it does not (NoPE), or when the list is
  // absent every no_rope_layer_interval-th layer without; empty / 0 when absent.
  std::vector<int64_t> no_rope_layers;
  int64_t no_rope_layer_interval = 0;
  // Granite 4 (GraniteMoeHybrid) and GraniteMoeShared: the width of the MLP beside the experts
  // (or, in Granite 4 without experts, the MLP's); Granite 4's rotary embeddings' switch
  // (position_embedding_type: "rope", or empty when absent or null: no rotary embeddings).
  int64_t shared_intermediate_size = 0;
  std::string position_embedding_type;

  // Parses config.json text; `file` names it in messages. A Gemma3ForConditionalGeneration's or
  // Mistral3ForConditionalGeneration's text_config is read as the model (the vision tower is not
  // run); transformers' defaults of Gemma 3, Mistral, Ministral 3, GLM-4, OLMo 3 and EXAONE 4
  // configs filled in.
  // Throws dq4::Error naming the file and the field for a missing or ill-typed field.
  static ModelConfig parse(std::string_view config_json, const std::string& file);
  static ModelConfig read(const std::string& model_dir);  // model_dir/config.json
};

// eos_token_id of model_dir/generation_config.json (a number or a list), or {} when the file is
// absent. Throws dq4::Error naming the file for malformed JSON or ids.
std::vector<int32_t> read_generation_eos_ids(const std::string& model_dir);

// One linear layer: its module name ("model.layers.0.self_attn.q_proj"), and its shape. Which
// modules a model has is the model layer's knowledge (dq4/architecture.h).
struct LinearModule {
  std::string name;
  int64_t out_features = 0;  // N
  int64_t in_features = 0;   // K
  bool has_bias = false;
  // Experts stored stacked (Granite's MoE: tensors [experts, N, K] under one module name): how
  // many the tensors hold, and which one this module is; 0 and -1 for a module of its own.
  int64_t stacked_experts = 0;
  int64_t expert = -1;
};

}  // namespace dq4
