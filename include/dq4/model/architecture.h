#pragma once
// What a Llama-family architecture is, decided from its config.json: the tensor and module names
// of each layer, which linear modules share an input (and so load as one fused Linear), whether
// the head is tied to the embeddings, q/k/v biases, Qwen3's per-head q/k norms, the rope variant
// and Mistral's sliding window. Anything in the config that would change the math and that dq4
// does not implement is refused here, naming the field, never ignored.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dq4/io/model_config.h"

namespace dq4 {

class Checkpoint;

// One expert of a mixture-of-experts layer: its gate and up (fused), and its down.
struct ExpertModules {
  std::vector<LinearModule> input;  // gate_proj, up_proj (Mixtral: w1, w3)
  LinearModule output;              // down_proj (Mixtral: w2)
};

// The tensors and linear modules of one decoder layer, as checkpoints name them.
struct LayerModules {
  std::string input_norm;  // model.layers.N.input_layernorm.weight; empty for OLMo, EXAONE 4
  std::string post_attention_norm;  // model.layers.N.post_attention_layernorm.weight
  // Qwen3's and Gemma 3's per-head norms, OLMoE's whole ones; empty otherwise.
  std::string q_norm, k_norm;
  // Gemma 2 / 3, OLMo 2 / 3 and EXAONE 4 (Architecture::post_norms): post_attention_norm
  // normalizes the attention's output before the residual add, post_feedforward_norm the MLP's;
  // Gemma normalizes the MLP's input by pre_feedforward_norm (empty for the others), OLMo and
  // EXAONE neither sublayer's input.
  std::string pre_feedforward_norm, post_feedforward_norm;
  // The fusion groups: modules that read the same input, in output order.
  std::vector<LinearModule> attention_input;  // q_proj, k_proj, v_proj (Phi-3: qkv_proj)
  LinearModule attention_output;              // o_proj
  // The dense MLP, or a sparse layer's shared expert (Qwen2-MoE; Ernie 4.5's shared experts, one
  // MLP); empty in other sparse layers.
  std::vector<LinearModule> mlp_input;  // gate_proj, up_proj (Phi-3: gate_up_proj)
  LinearModule mlp_output;              // down_proj
  // Sparse layers: the router (mlp.gate, [experts, hidden]) and Qwen2-MoE's shared-expert gate
  // ([1, hidden]) after it, which read the same input; empty in dense layers.
  std::vector<LinearModule> router;
  std::vector<ExpertModules> experts;
  // Ernie 4.5 MoE and GLM-4 MoE: the router's selection bias
  // (mlp.moe_statics.e_score_correction_bias, [1, experts]; GLM: mlp.gate.e_score_correction_bias,
  // [experts]), added to the scores to choose the experts, not to weight them; empty for the
  // others.
  std::string router_bias;
};

// The most experts a sparse layer may have (the largest released mixtures have 512).
constexpr int64_t kMaxExperts = 1024;

// How a sparse layer's router chooses and weights a token's experts (src/model/routing.h).
struct ExpertRouting {
  bool sigmoid = false;      // GLM-4 MoE: each expert's sigmoid; else the softmax over experts
  bool renormalize = false;  // the chosen weights divided by their sum (norm_topk_prob)
  float norm_min = 0;        // Ernie 4.5: the least divisor (moe_norm_min)
  float norm_epsilon = 0;    // GLM-4 MoE: added to the sum before dividing
  float scale = 1;           // GLM-4 MoE: the weights' factor (routed_scaling_factor)
  // GLM-4 MoE: the experts in `groups` equal groups, a token's chosen from the `groups_used`
  // groups whose two best scores sum highest.
  int64_t groups = 1, groups_used = 1;
  bool bias_required = false;  // the checkpoint must hold LayerModules::router_bias
};

enum class RopeVariant { plain, linear, llama3, longrope, yarn };
enum class Activation { silu, gelu_tanh };  // SwiGLU; GeGLU with the tanh GELU (Gemma)

struct Architecture {
  ModelConfig config;
  bool qkv_bias = false;  // attention_bias; always for Qwen2
  bool o_bias = false;    // attention_bias, except for Qwen2
  bool qk_norm = false;   // Qwen3, Qwen3-MoE, OLMoE, OLMo 2 / 3, EXAONE 4
  // OLMoE, OLMo 2 / 3: q/k norms over the whole projection (q_proj's and k_proj's outputs), not per
  // head.
  bool qk_norm_whole = false;
  // Gemma 2 / 3, OLMo 2 / 3, EXAONE 4: each sublayer's output normalized before the residual add
  // (see LayerModules); OLMo and EXAONE normalize no sublayer's input.
  bool post_norms = false;
  int64_t sliding_window = 0;  // tokens a query sees (itself included); 0 = all (Mistral only)
  RopeVariant rope = RopeVariant::plain;
  // Ernie 4.5, GLM-4: each head's rotated pairs are adjacent (2i, 2i + 1), not i and i + half.
  bool rope_interleaved = false;
  // Mixture of experts: experts per sparse layer (0: dense model), the experts a token uses, the
  // experts' intermediate size, the router's rule, the shared expert (its intermediate size; 0:
  // none) and whether a sigmoid gate scales it (Qwen2-MoE's does, Ernie 4.5's and GLM-4 MoE's are
  // added as they are).
  int64_t experts = 0, experts_per_token = 0, expert_intermediate = 0;
  ExpertRouting routing;
  int64_t shared_expert_intermediate = 0;
  bool shared_expert_gated = false;

  // Gemma 2 / 3: RMSNorm weights used as (1 + w), the two extra norms of each layer, embeddings
  // scaled by sqrt(hidden_size) in their dtype.
  bool gemma = false;
  Activation activation = Activation::silu;
  // query_pre_attn_scalar^-1/2 (Gemma), attention_multiplier (Granite), else head_dim^-1/2
  float attention_scale = 0;
  float attention_softcap = 0, final_softcap = 0;  // Gemma 2; 0 = none
  // Per layer: its sliding window (0 = global). Gemma 2 alternates local and global layers,
  // Gemma 3, OLMo 3 and EXAONE 4 follow their patterns; Mistral and Phi-3 window every layer.
  std::vector<int64_t> layer_window;
  // The rope base of Gemma 3's and OLMo 3's sliding layers, which rotate unscaled; 0 = every
  // layer the same rope.
  double local_rope_theta = 0;
  int64_t rotary_dim = 0;  // head_dim * partial_rotary_factor (Phi-3); even
  // Per layer: whether it rotates q and k (all but SmolLM3's NoPE layers and EXAONE 4's global
  // ones).
  std::vector<bool> layer_rope;
  // longrope: the factors switch from short to long once a sequence's length exceeds this.
  int64_t longrope_original_context = 0;
  float rope_attention_factor = 1.0f;  // longrope's and yarn's scaling of cos and sin
  // yarn: the original context, the factor, and the frequency indices between which the ramp
  // goes from extrapolated (below low) to interpolated (above high) frequencies.
  struct YarnRamp {
    int64_t original_context = 0;
    double factor = 1, low = 0, high = 0;
  } yarn;
  // The longest sequence the model runs: max_position_embeddings, or where longer (as vLLM) with
  // yarn the original context times the factor, with linear scaling (but Gemma 3's)
  // max_position_embeddings times the factor.
  int64_t context_length = 0;

  // Ministral 3 (llama_4_scaling_beta): each query, after its rotation, times
  // 1 + beta ln(1 + floor(position / context)), context the rope's original one; beta 0 = none.
  double query_scale_beta = 0;
  int64_t query_scale_context = 0;

  // Granite: embeddings times embedding_multiplier (in the table's dtype), each layer's attention
  // and MLP outputs times residual_multiplier before they are added to the residual stream, the
  // logits divided by logits_scaling; 1 elsewhere.
  float embedding_multiplier = 1.0f, residual_multiplier = 1.0f, logits_divisor = 1.0f;

  // The text model's tensors: "model.", or for multimodal checkpoints (Gemma 3, Mistral 3)
  // "language_model.model." (older transformers) or "model.language_model." (newer).
  std::string prefix = "model.";

  std::string embedding = "model.embed_tokens.weight";
  std::string final_norm = "model.norm.weight";
  // The untied head's module; nullopt when tied (the embedding matrix is the head).
  std::optional<LinearModule> head;

  // Throws dq4::Error naming the config file's field for an architecture, activation, rope type
  // or other setting dq4 does not run; `file` names config.json in messages.
  static Architecture from_config(const ModelConfig& config, const std::string& file);
  // model_dir/config.json, and for multimodal checkpoints the names of the checkpoint
  // there (which prefix its text model is under).
  static Architecture read(const std::string& model_dir);
  // The same from model_dir's config and checkpoint, already read and opened.
  static Architecture read(const ModelConfig& config, const Checkpoint& checkpoint);
  // Puts the text model's tensors under `text_prefix`, an untied head at `head_name`.
  void name_text_model(const std::string& text_prefix, const std::string& head_name);

  LayerModules layer(int64_t index) const;
  // Whether layer `index` is a mixture of experts (decoder_sparse_step, mlp_only_layers, Ernie
  // 4.5's range of sparse layers).
  bool sparse_layer(int64_t index) const;
  // The name prefix of sparse layer `index`'s router and experts ("model.layers.3.mlp.").
  std::string sparse_block(int64_t index) const;
  // Throw naming the field when the checkpoint does not hold the config's last layer, or the
  // first sparse layer's last expert.
  static void check_layer_count(const ModelConfig& config, const Checkpoint& checkpoint);
  void check_expert_count(const Checkpoint& checkpoint) const;
  // Every linear module in forward order, the untied head last.
  std::vector<LinearModule> linear_modules() const;
  // The same grouped by shared input: per layer {q, k, v}, {o}, {gate, up}, {down}, then the head;
  // a sparse layer's {router[, shared-expert gate]}, each expert's {gate, up}, {down}, then
  // the shared expert's {gate, up}, {down} where it has one.
  std::vector<std::vector<LinearModule>> linear_groups() const;
  // RoPE's inverse frequencies (rotary_dim / 2 of them), with the rope variant's scaling applied
  // (longrope: the short factors, or the long ones with `long_factors`).
  std::vector<float> rope_inv_freq(bool long_factors = false) const;
  // The sliding layers' frequencies (local_rope_theta, no scaling).
  std::vector<float> local_rope_inv_freq() const;
  bool local_layer(int64_t index) const { return local_rope_theta > 0 && layer_window[index] > 0; }
};

// After a model was read from `checkpoint` (loaded, exported): the tensors it did not use, sorted,
// leaving out precomputed rotary tables (rotary_emb.inv_freq), which dq4 computes itself.
std::vector<std::string> unused_tensors(const Checkpoint& checkpoint);

}  // namespace dq4
