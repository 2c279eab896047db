// The language model of a multimodal checkpoint's config.json, and the defaults of the text
// model types whose configs are often written without them.

#include "text_config.h"

#include "dq4/kernels/error.h"

namespace dq4::io {
namespace {

// transformers' defaults per text model type, which the hub's configs rely on.
const nlohmann::json& type_defaults(const std::string& model_type) {
  static const nlohmann::json none = nlohmann::json::object();
  static const nlohmann::json gemma3 = {{"vocab_size", 262208},
                                        {"hidden_size", 2304},
                                        {"intermediate_size", 9216},
                                        {"num_hidden_layers", 26},
                                        {"num_attention_heads", 8},
                                        {"num_key_value_heads", 4},
                                        {"head_dim", 256},
                                        {"hidden_activation", "gelu_pytorch_tanh"},
                                        {"max_position_embeddings", 131072},
                                        {"rms_norm_eps", 1e-6},
                                        {"rope_theta", 1000000.0},
                                        {"query_pre_attn_scalar", 256},
                                        {"sliding_window", 4096},
                                        {"rope_local_base_freq", 10000.0},
                                        {"sliding_window_pattern", 6},
                                        {"tie_word_embeddings", true}};
  static const nlohmann::json mistral = {
      {"vocab_size", 32000},        {"hidden_size", 4096},
      {"intermediate_size", 14336}, {"num_hidden_layers", 32},
      {"num_attention_heads", 32},  {"num_key_value_heads", 8},
      {"hidden_act", "silu"},       {"max_position_embeddings", 131072},
      {"rms_norm_eps", 1e-6},       {"rope_theta", 10000.0},
      {"sliding_window", 4096},     {"tie_word_embeddings", false}};
  static const nlohmann::json ministral3 = {{"vocab_size", 131072},
                                            {"hidden_size", 4096},
                                            {"intermediate_size", 14336},
                                            {"num_hidden_layers", 34},
                                            {"num_attention_heads", 32},
                                            {"num_key_value_heads", 8},
                                            {"head_dim", 128},
                                            {"hidden_act", "silu"},
                                            {"max_position_embeddings", 262144},
                                            {"rms_norm_eps", 1e-5},
                                            {"tie_word_embeddings", false},
                                            {"bos_token_id", 1},
                                            {"eos_token_id", 2},
                                            {"rope_parameters",
                                             {{"rope_type", "yarn"},
                                              {"rope_theta", 1000000.0},
                                              {"factor", 16.0},
                                              {"original_max_position_embeddings", 16384},
                                              {"beta_fast", 32.0},
                                              {"beta_slow", 1.0},
                                              {"mscale_all_dim", 1.0},
                                              {"mscale", 1.0},
                                              {"llama_4_scaling_beta", 0.1}}}};
  // Glm4Config's: half of each head rotated, q/k/v biases.
  static const nlohmann::json glm4 = {{"partial_rotary_factor", 0.5},
                                      {"attention_bias", true},
                                      {"head_dim", 128},
                                      {"hidden_act", "silu"},
                                      {"max_position_embeddings", 131072},
                                      {"rms_norm_eps", 1.5625e-07},
                                      {"tie_word_embeddings", false}};
  // Ernie4_5_MoeConfig's (21B-A3B's shape aside): the mixture, its rope base and norms.
  static const nlohmann::json ernie4_5_moe = {{"moe_num_experts", 64},
                                              {"moe_k", 6},
                                              {"moe_intermediate_size", 1536},
                                              {"moe_num_shared_experts", 2},
                                              {"moe_layer_start_index", 1},
                                              {"moe_layer_end_index", -1},
                                              {"moe_layer_interval", 1},
                                              {"moe_norm_min", 1e-12},
                                              {"rope_theta", 500000.0},
                                              {"rms_norm_eps", 1e-5},
                                              {"max_position_embeddings", 131072},
                                              {"hidden_act", "silu"},
                                              {"use_bias", false},
                                              {"tie_word_embeddings", true}};
  // Glm4MoeConfig's (GLM-4.5-Air's shape aside).
  static const nlohmann::json glm4_moe = {{"n_routed_experts", 128},
                                          {"num_experts_per_tok", 8},
                                          {"moe_intermediate_size", 1408},
                                          {"n_shared_experts", 1},
                                          {"first_k_dense_replace", 1},
                                          {"n_group", 1},
                                          {"topk_group", 1},
                                          {"routed_scaling_factor", 1.0},
                                          {"norm_topk_prob", true},
                                          {"use_qk_norm", false},
                                          {"partial_rotary_factor", 0.5},
                                          {"max_position_embeddings", 131072},
                                          {"rms_norm_eps", 1e-5},
                                          {"hidden_act", "silu"},
                                          {"tie_word_embeddings", false}};
  // GraniteMoeHybridConfig's: experts unless the config says 0, every layer mamba unless
  // layer_types says otherwise (absent, so refused), no rotary embeddings unless
  // position_embedding_type says "rope".
  static const nlohmann::json granite_hybrid = {{"num_local_experts", 8},
                                                {"num_experts_per_tok", 2},
                                                {"shared_intermediate_size", 1024},
                                                {"intermediate_size", 11008},
                                                {"max_position_embeddings", 2048},
                                                {"rms_norm_eps", 1e-6},
                                                {"hidden_act", "silu"},
                                                {"tie_word_embeddings", false}};
  // GraniteMoeConfig's and GraniteMoeSharedConfig's mixture.
  static const nlohmann::json granite_moe = {
      {"num_local_experts", 8}, {"num_experts_per_tok", 2}, {"max_position_embeddings", 2048},
      {"rms_norm_eps", 1e-6},   {"hidden_act", "silu"},     {"tie_word_embeddings", false}};
  // Olmo3Config's and Exaone4Config's window (a null one stays none).
  static const nlohmann::json windowed = {{"sliding_window", 4096}};
  if (model_type == "gemma3_text") return gemma3;
  if (model_type == "olmo3" || model_type == "exaone4") return windowed;
  if (model_type == "glm4") return glm4;
  if (model_type == "ernie4_5_moe") return ernie4_5_moe;
  if (model_type == "glm4_moe") return glm4_moe;
  if (model_type == "mistral") return mistral;
  if (model_type == "ministral3") return ministral3;
  if (model_type == "granitemoehybrid") return granite_hybrid;
  if (model_type == "granitemoe" || model_type == "granitemoeshared") return granite_moe;
  return none;
}

}  // namespace

bool has_text_model(const nlohmann::json& config) {
  if (!config.is_object()) return false;
  const nlohmann::json architectures = config.value("architectures", nlohmann::json::array());
  return architectures == nlohmann::json::array({"Gemma3ForConditionalGeneration"}) ||
         architectures == nlohmann::json::array({"Mistral3ForConditionalGeneration"});
}

void lift_text_config(nlohmann::json& config, const std::string& file) {
  const std::string architecture = config["architectures"][0].get<std::string>();
  const auto text = config.find("text_config");
  if (text == config.end() || !text->is_object())
    throw Error(file + ": text_config: " + architecture + " needs a text_config object");
  nlohmann::json out = std::move(*text);
  out["architectures"] = std::move(config["architectures"]);
  for (const char* key : {"eos_token_id", "bos_token_id", "tie_word_embeddings", "torch_dtype",
                          "dtype", "pad_token_id"})
    if (!out.contains(key) && config.contains(key)) out[key] = std::move(config[key]);
  // The text model's type where text_config leaves it out, as transformers' config classes.
  if (!out.contains("model_type"))
    out["model_type"] =
        architecture == "Gemma3ForConditionalGeneration" ? "gemma3_text" : "mistral";
  config = std::move(out);
  add_type_defaults(config);
}

void add_type_defaults(nlohmann::json& config) {
  const auto type = config.find("model_type");
  if (type == config.end() || !type->is_string()) return;
  const auto rope = config.find("rope_parameters");
  const bool rope_given = rope != config.end() || config.contains("rope_scaling");
  // transformers 5 writes partial_rotary_factor inside rope_parameters.
  // (A pointer: an object's members stay where they are as keys are added beside them.)
  const nlohmann::json* inside = rope != config.end() && rope->is_object() ? &*rope : nullptr;
  for (const auto& [key, value] : type_defaults(type->get<std::string>()).items()) {
    if (config.contains(key) || (inside != nullptr && inside->contains(key))) continue;
    // A config with its own rope keeps it whole (transformers 4 writes rope_theta beside
    // rope_scaling, transformers 5 inside rope_parameters).
    if (key == "rope_parameters" && rope_given) continue;
    config[key] = value;
  }
}

}  // namespace dq4::io
