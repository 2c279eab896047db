// The language model of a Gemma 3 multimodal checkpoint's config.json.

#include "gemma3_text_config.h"

#include "dq4/kernels/error.h"

namespace dq4::io {

nlohmann::json gemma3_text_config(const nlohmann::json& config, const std::string& file) {
  const auto text = config.find("text_config");
  if (text == config.end() || !text->is_object())
    throw Error(file + ": text_config: Gemma3ForConditionalGeneration needs a text_config object");
  nlohmann::json out = *text;
  out["architectures"] = config["architectures"];
  for (const char* key : {"eos_token_id", "bos_token_id", "tie_word_embeddings", "torch_dtype",
                          "dtype", "pad_token_id"})
    if (!out.contains(key) && config.contains(key)) out[key] = config[key];
  // Gemma3TextConfig's defaults (transformers), which the hub's text_config relies on.
  const nlohmann::json defaults = {{"vocab_size", 262208},
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
  for (const auto& [key, value] : defaults.items())
    if (!out.contains(key)) out[key] = value;
  return out;
}

}  // namespace dq4::io
