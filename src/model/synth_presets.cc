// The `dq4 synth` presets: real model shapes, and tiny models of each architecture.

#include <string>
#include <vector>

#include "dq4/error.h"
#include "dq4/synth.h"

namespace dq4 {
namespace {

RopeScaling llama3_rope(double factor, int64_t original_context) {
  RopeScaling r;
  r.type = "llama3";
  r.factor = factor;
  r.low_freq_factor = 1.0;
  r.high_freq_factor = 4.0;
  r.original_max_position_embeddings = original_context;
  return r;
}

// Llama 3.x: shapes differ, the rest is shared.
SynthOptions llama3(int64_t hidden, int64_t intermediate, int64_t layers, int64_t heads,
                    int64_t head_dim, bool tied, double rope_factor) {
  SynthOptions o;
  ModelConfig& c = o.config;
  c.architecture = "LlamaForCausalLM";
  c.model_type = "llama";
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_hidden_layers = layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = 8;
  c.head_dim = head_dim;
  c.vocab_size = 128256;
  c.max_position_embeddings = 131072;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 500000.0;
  c.rope_scaling = llama3_rope(rope_factor, 8192);
  c.tie_word_embeddings = tied;
  return o;
}

SynthOptions qwen3_0_6b() {
  SynthOptions o;
  ModelConfig& c = o.config;
  c.architecture = "Qwen3ForCausalLM";
  c.model_type = "qwen3";
  c.hidden_size = 1024;
  c.intermediate_size = 3072;
  c.num_hidden_layers = 28;
  c.num_attention_heads = 16;
  c.num_key_value_heads = 8;
  c.head_dim = 128;
  c.vocab_size = 151936;
  c.max_position_embeddings = 40960;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 1000000.0;
  c.tie_word_embeddings = true;
  return o;
}

SynthOptions tiny(std::string_view name) {
  SynthOptions o;
  o.weight_std = 0.1f;
  o.norm_spread = 0.1f;
  ModelConfig& c = o.config;
  c.architecture = "LlamaForCausalLM";
  c.model_type = "llama";
  c.hidden_size = 96;
  c.intermediate_size = 200;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 24;
  c.vocab_size = 384;
  c.max_position_embeddings = 256;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 10000.0;
  c.tie_word_embeddings = false;
  if (name == "tiny-llama3") {
    c.rope_scaling = llama3_rope(4.0, 32);
  } else if (name == "tiny-linear-rope") {
    c.rope_scaling.type = "linear";
    c.rope_scaling.factor = 2.0;
  } else if (name == "tiny-tied") {
    c.tie_word_embeddings = true;
  } else if (name == "tiny-mistral") {
    c.architecture = "MistralForCausalLM";
    c.model_type = "mistral";
    c.sliding_window = 16;
  } else if (name == "tiny-qwen2") {
    c.architecture = "Qwen2ForCausalLM";
    c.model_type = "qwen2";
    c.attention_bias = true;
    c.rms_norm_eps = 1e-6;
  } else if (name == "tiny-qwen3") {
    c.architecture = "Qwen3ForCausalLM";
    c.model_type = "qwen3";
    c.rms_norm_eps = 1e-6;
    c.tie_word_embeddings = true;
  }
  return o;
}

}  // namespace

const std::vector<std::string>& synth_preset_names() {
  static const std::vector<std::string> names = {
      "llama-1b",         "llama-3b",  "llama-8b",     "qwen3-0.6b", "tiny",      "tiny-llama3",
      "tiny-linear-rope", "tiny-tied", "tiny-mistral", "tiny-qwen2", "tiny-qwen3"};
  return names;
}

SynthOptions synth_preset(std::string_view name) {
  SynthOptions o;
  if (name == "llama-1b") {
    o = llama3(2048, 8192, 16, 32, 64, true, 32.0);
  } else if (name == "llama-3b") {
    o = llama3(3072, 8192, 28, 24, 128, true, 32.0);
  } else if (name == "llama-8b") {
    o = llama3(4096, 14336, 32, 32, 128, false, 8.0);
  } else if (name == "qwen3-0.6b") {
    o = qwen3_0_6b();
  } else if (name.starts_with("tiny") && [&] {
               for (const std::string& n : synth_preset_names())
                 if (n == name) return true;
               return false;
             }()) {
    o = tiny(name);
  } else {
    std::string list;
    for (const std::string& n : synth_preset_names()) list += (list.empty() ? "" : ", ") + n;
    throw Error("synth: unknown preset '" + std::string(name) + "' (presets: " + list + ")");
  }
  o.dtype = Dtype::BF16;
  o.config.torch_dtype = "bfloat16";
  return o;
}

}  // namespace dq4
