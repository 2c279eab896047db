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

// The tensors and linear modules of one decoder layer, as checkpoints name them.
struct LayerModules {
  std::string input_norm;           // model.layers.N.input_layernorm.weight
  std::string post_attention_norm;  // model.layers.N.post_attention_layernorm.weight
  std::string q_norm, k_norm;       // Qwen3's per-head norms; empty for the others
  // The fusion groups: modules that read the same input, in output order.
  std::vector<LinearModule> attention_input;  // q_proj, k_proj, v_proj
  LinearModule attention_output;              // o_proj
  std::vector<LinearModule> mlp_input;        // gate_proj, up_proj
  LinearModule mlp_output;                    // down_proj
};

enum class RopeVariant { plain, linear, llama3 };

struct Architecture {
  ModelConfig config;
  bool qkv_bias = false;       // attention_bias; always for Qwen2
  bool o_bias = false;         // attention_bias, except for Qwen2
  bool qk_norm = false;        // Qwen3
  int64_t sliding_window = 0;  // tokens a query sees (itself included); 0 = all (Mistral only)
  RopeVariant rope = RopeVariant::plain;

  std::string embedding = "model.embed_tokens.weight";
  std::string final_norm = "model.norm.weight";
  // The untied head's module; nullopt when tied (the embedding matrix is the head).
  std::optional<LinearModule> head;

  // Throws dq4::Error naming the config file's field for an architecture, activation, rope type
  // or other setting dq4 does not run; `file` names config.json in messages.
  static Architecture from_config(const ModelConfig& config, const std::string& file);
  static Architecture read(const std::string& model_dir);  // model_dir/config.json

  LayerModules layer(int64_t index) const;
  // Every linear module in forward order, the untied head last.
  std::vector<LinearModule> linear_modules() const;
  // The same grouped by shared input: per layer {q, k, v}, {o}, {gate, up}, {down}, then the head.
  std::vector<std::vector<LinearModule>> linear_groups() const;
  // RoPE's inverse frequencies (head_dim / 2 of them), with the rope variant's scaling applied.
  std::vector<float> rope_inv_freq() const;
};

}  // namespace dq4
