// A Llama-family checkpoint -> GGUF, tensor by tensor: names and metadata as
// convert_hf_to_gguf.py writes them, int4 group-32 modules re-encoded as Q4_0 blocks.

#include "dq4/convert/gguf_export.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <numbers>
#include <optional>

#include "dq4/io/checkpoint.h"
#include "dq4/io/gguf_writer.h"
#include "dq4/io/linear_tensors.h"
#include "dq4/io/quant_config.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/half.h"
#include "dq4/kernels/int4_codec.h"
#include "dq4/model/architecture.h"
#include "gguf_vocab.h"

namespace dq4 {
namespace {

namespace fs = std::filesystem;

// How the architecture maps onto llama.cpp's.
struct GgufArch {
  std::string name;
  bool permute_qk = false;  // llama.cpp's "llama" rotates interleaved pairs, HF rotates halves
};

// Architecture::read has refused what dq4 does not run (other rope types, activations...).
GgufArch gguf_arch(const ModelConfig& c) {
  // Mixtral is llama.cpp's llama with experts.
  if (c.architecture == "LlamaForCausalLM" || c.architecture == "MistralForCausalLM" ||
      c.architecture == "MixtralForCausalLM")
    return {"llama", true};
  if (c.architecture == "Qwen2ForCausalLM") return {"qwen2", false};
  if (c.architecture == "Qwen3ForCausalLM") return {"qwen3", false};
  if (c.architecture == "Qwen2MoeForCausalLM") return {"qwen2moe", false};
  if (c.architecture == "Qwen3MoeForCausalLM") return {"qwen3moe", false};
  if (c.architecture == "OlmoeForCausalLM") return {"olmoe", false};
  if (c.architecture == "Gemma2ForCausalLM") return {"gemma2", false};
  if (c.architecture == "Gemma3ForCausalLM" || c.architecture == "Gemma3ForConditionalGeneration")
    return {"gemma3", false};
  if (c.architecture == "Phi3ForCausalLM") return {"phi3", false};
  // Granite 4 without mamba layers is llama.cpp's granite, or with experts its granitemoe, as its
  // script converts it.
  if (c.architecture == "GraniteForCausalLM" ||
      (c.architecture == "GraniteMoeHybridForCausalLM" && c.num_experts == 0))
    return {"granite", true};
  if (c.architecture.starts_with("GraniteMoe")) return {"granitemoe", true};
  if (c.architecture == "SmolLM3ForCausalLM") return {"smollm3", true};
  // OLMo 3 is llama.cpp's olmo2 with sliding windows.
  if (c.architecture == "Olmo2ForCausalLM" || c.architecture == "Olmo3ForCausalLM")
    return {"olmo2", false};
  if (c.architecture == "Exaone4ForCausalLM") return {"exaone4", false};
  // Interleaved pairs as llama.cpp rotates them: no permutation.
  if (c.architecture == "Ernie4_5ForCausalLM") return {"ernie4_5", false};
  if (c.architecture == "Ernie4_5_MoeForCausalLM") return {"ernie4_5-moe", false};
  if (c.architecture == "Glm4ForCausalLM") return {"glm4", false};
  if (c.architecture == "Glm4MoeForCausalLM") return {"glm4moe", false};
  if (c.architecture == "Mistral3ForConditionalGeneration" ||
      c.architecture == "Ministral3ForCausalLM")
    return {"mistral3", true};
  throw Error("export-gguf: architecture '" + c.architecture + "' has no GGUF equivalent here");
}

// Source row of output row `r` after llama.cpp's q/k permutation: within each head of `d` rows,
// HF's halves [x0..x(d/2-1) | y0..] become interleaved pairs (x0 y0 x1 y1 ...).
int64_t permuted_row(int64_t r, int64_t rows, int64_t heads) {
  const int64_t d = rows / heads, head = r / d, within = r % d;
  return head * d + (within % 2) * (d / 2) + within / 2;
}

// A float tensor's elements as f32 (its data checked once, not per element).
class FloatElements {
 public:
  explicit FloatElements(const TensorView& t) : dtype_(t.dtype) {
    switch (t.dtype) {
      case Dtype::F32:
        f32_ = t.as<float>().data();
        break;
      case Dtype::BF16:
      case Dtype::F16:
        half_ = t.as<uint16_t>(t.dtype).data();
        break;
      default:
        throw Error("export-gguf: tensor '" + t.name + "' in " + t.file + " is " +
                    std::string(dtype_name(t.dtype)) + ", not F32, BF16 or F16");
    }
  }
  float operator[](int64_t i) const {
    if (f32_ != nullptr) return f32_[i];
    return dtype_ == Dtype::BF16 ? bf16_to_f32(half_[i]) : f16_to_f32(half_[i]);
  }

 private:
  Dtype dtype_;
  const float* f32_ = nullptr;
  const uint16_t* half_ = nullptr;
};

GgmlType ggml_type(Dtype dtype, const TensorView& t) {
  switch (dtype) {
    case Dtype::F32:
      return GgmlType::F32;
    case Dtype::BF16:
      return GgmlType::BF16;
    case Dtype::F16:
      return GgmlType::F16;
    default:
      throw Error("export-gguf: tensor '" + t.name + "' in " + t.file + " is " +
                  std::string(dtype_name(t.dtype)) + ", not F32, BF16 or F16");
  }
}

// What writes a float tensor as `type` (F32, BF16 or F16), rows taken through `row_of`; `rows`
// of them (-1: as many as the tensor has).
GgufWriter::Producer float_producer(const TensorView& t, GgmlType type,
                                    std::function<int64_t(int64_t)> row_of, int64_t rows = -1) {
  const FloatElements values(t);  // refuses non-float dtypes now, not while writing
  const int64_t stored_rows = t.shape.size() == 2 ? t.shape[0] : 1;
  const int64_t cols = t.numel() / stored_rows;
  if (rows < 0) rows = stored_rows;
  return [values, type, rows, cols, row_of](uint8_t* out, size_t) {
    const size_t size = type == GgmlType::F32 ? 4 : 2;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t src = row_of ? row_of(r) : r;
      for (int64_t c = 0; c < cols; ++c) {
        const float v = values[src * cols + c];
        uint8_t* dst = out + static_cast<size_t>(r * cols + c) * size;
        if (type == GgmlType::F32) {
          std::memcpy(dst, &v, 4);
        } else {
          const uint16_t h = type == GgmlType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
          std::memcpy(dst, &h, 2);
        }
      }
    }
  };
}

void add_float_tensor(GgufWriter& w, const std::string& name, const TensorView& t, GgmlType type,
                      std::function<int64_t(int64_t)> row_of, int64_t rows = -1) {
  std::vector<int64_t> shape = t.shape;
  if (rows >= 0) shape[0] = rows;
  w.add_tensor(name, type, shape, float_producer(t, type, std::move(row_of), rows));
}

// What writes an int4 group-32 module as Q4_0: the same values, the same scales (refused unless
// f16 holds them exactly); `rows` rows taken through `row_of` (-1: as many as the module has).
GgufWriter::Producer q4_0_producer(const LinearTensors& lt, std::function<int64_t(int64_t)> row_of,
                                   int64_t rows = -1) {
  const std::string& module = lt.module;
  if (lt.scheme.group_size != kQ4_0BlockSize)
    throw Error("export-gguf: module '" + module + "': " +
                (lt.scheme.group_size == 0 ? std::string("channelwise scales")
                                           : "group size " + std::to_string(lt.scheme.group_size)) +
                ": Q4_0 holds groups of 32 only");
  if (lt.k % kQ4_0BlockSize != 0)
    throw Error("export-gguf: module '" + module + "': in_features " + std::to_string(lt.k) +
                " is not a multiple of 32 (Q4_0 blocks)");
  const int64_t n = rows >= 0 ? rows : lt.n, k = lt.k, groups = k / kQ4_0BlockSize;
  const TensorView& scales = *lt.weight_scale;
  const FloatElements scale_values(scales);
  // Check every scale before the file is started.
  for (int64_t i = 0; i < lt.n * groups; ++i) {
    const float s = scale_values[i];
    if (f16_to_f32(f32_to_f16(s)) != s)
      throw Error("export-gguf: tensor '" + scales.name + "' [" + std::to_string(i / groups) +
                  ", " + std::to_string(i % groups) + "] = " + std::to_string(s) +
                  " is not exactly representable in f16 (Q4_0 scales are f16)");
  }
  return [lt, scale_values, n, k, groups, row_of, module](uint8_t* out, size_t) {
    std::vector<int8_t> row(static_cast<size_t>(k));
    const int64_t words = (k + 7) / 8;
    const int32_t* packed = lt.weight_packed ? lt.weight_packed->as<int32_t>().data() : nullptr;
    const int8_t* values = lt.weight ? lt.weight->as<int8_t>().data() : nullptr;
    for (int64_t r = 0; r < n; ++r) {
      const int64_t src = row_of ? row_of(r) : r;
      if (packed != nullptr)
        unpack_int4_rows(packed + src * words, 1, k, row.data());
      else
        std::memcpy(row.data(), values + src * k, static_cast<size_t>(k));
      for (int64_t g = 0; g < groups; ++g) {
        uint8_t* block = out + static_cast<size_t>(r * groups + g) * kQ4_0BlockBytes;
        const uint16_t d = f32_to_f16(scale_values[src * groups + g]);
        std::memcpy(block, &d, 2);
        const int8_t* q = row.data() + g * kQ4_0BlockSize;
        for (int j = 0; j < 16; ++j) {
          if (q[j] < -8 || q[j] > 7 || q[j + 16] < -8 || q[j + 16] > 7)
            throw Error("export-gguf: module '" + module + "' row " + std::to_string(src) +
                        ": int4 value outside [-8, 7]");
          block[2 + j] = static_cast<uint8_t>((q[j] + 8) | ((q[j + 16] + 8) << 4));
        }
      }
    }
  };
}

void add_q4_0_tensor(GgufWriter& w, const std::string& name, const LinearTensors& lt,
                     std::function<int64_t(int64_t)> row_of, int64_t rows = -1) {
  w.add_tensor(name, GgmlType::Q4_0, {rows >= 0 ? rows : lt.n, lt.k},
               q4_0_producer(lt, std::move(row_of), rows));
}

// Several producers of equal size one after the other: experts stacked as llama.cpp's
// ffn_*_exps tensors hold them ([experts, n, k]).
GgufWriter::Producer stacked_producer(std::vector<GgufWriter::Producer> parts) {
  return [parts = std::move(parts)](uint8_t* out, size_t bytes) {
    const size_t each = bytes / parts.size();
    for (size_t i = 0; i < parts.size(); ++i) parts[i](out + i * each, each);
  };
}

// llama.cpp's rope_freqs for llama3 scaling: per frequency pair, the divisor of its frequency.
std::vector<float> llama3_rope_factors(const ModelConfig& c) {
  const RopeScaling& r = c.rope_scaling;
  const double context =
      r.original_max_position_embeddings > 0 ? r.original_max_position_embeddings : 8192;
  const double low_wavelen = context / r.low_freq_factor,
               high_wavelen = context / r.high_freq_factor;
  std::vector<float> factors;
  for (int64_t i = 0; i < c.head_dim; i += 2) {
    const float freq = static_cast<float>(
        1.0 / std::pow(c.rope_theta, static_cast<double>(i) / static_cast<double>(c.head_dim)));
    const float wavelen = static_cast<float>(2 * std::numbers::pi) / freq;
    if (wavelen < high_wavelen) {
      factors.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      factors.push_back(static_cast<float>(r.factor));
    } else {
      const float smooth = static_cast<float>((context / wavelen - r.low_freq_factor) /
                                              (r.high_freq_factor - r.low_freq_factor));
      factors.push_back(1.0f / ((1.0f - smooth) / static_cast<float>(r.factor) + smooth));
    }
  }
  return factors;
}

// llama.cpp's olmo2 and exaone4 window layer i when i % period < period - 1 (period 0: every
// layer): the period of this model's windowed layers, which must follow that rule; 1 when no
// layer is windowed.
int64_t window_period(const Architecture& a, const std::string& arch) {
  const auto& windows = a.layer_window;
  const auto first_global = std::find(windows.begin(), windows.end(), 0);
  const int64_t period = first_global == windows.end() ? 0 : first_global - windows.begin() + 1;
  for (size_t i = 0; i < windows.size(); ++i) {
    const auto p = static_cast<size_t>(period);
    if ((windows[i] > 0) != (p == 0 || i % p < p - 1))
      throw Error("export-gguf: layer_types: layer " + std::to_string(i) + ": llama.cpp's " + arch +
                  " repeats the pattern of the first " + std::to_string(period) +
                  " layers (windows, then full attention); this model's differs");
  }
  return period;
}

// What GGUF cannot tell llama.cpp's olmo2 and exaone4 about windows: olmo2 rotates the sliding
// layers at rope_theta (unscaled); exaone4 runs windows (and its global layers' NoPE) for
// 64-layer models alone, and windows then whatever the keys say.
void check_windows(const Architecture& a, const std::string& arch, bool windowed) {
  if (arch == "olmo2" && windowed && a.local_rope_theta != a.config.rope_theta)
    throw Error("export-gguf: rope_parameters.sliding_attention.rope_theta " +
                std::to_string(a.local_rope_theta) + ": llama.cpp's olmo2 rotates the sliding " +
                "layers at rope_theta " + std::to_string(a.config.rope_theta));
  if (arch == "exaone4" && windowed != (a.config.num_hidden_layers == 64))
    throw Error(
        "export-gguf: sliding_window: llama.cpp's exaone4 runs windows for models of 64 "
        "layers and no others, this model has " +
        std::to_string(a.config.num_hidden_layers) +
        (windowed ? " layers and windows" : " layers and none"));
}

void add_hparams(GgufWriter& w, const Architecture& a, const std::string& arch) {
  const ModelConfig& c = a.config;
  // A count the config gives that GGUF's uint32 cannot hold is refused rather than cut.
  const auto u32 = [&w](const std::string& key, int64_t v) {
    if (v < 0 || v > static_cast<int64_t>(UINT32_MAX))
      throw Error("export-gguf: " + key + " = " + std::to_string(v) +
                  " does not fit GGUF's uint32");
    w.add_u32(key, static_cast<uint32_t>(v));
  };
  u32(arch + ".vocab_size", c.vocab_size);
  u32(arch + ".context_length", c.max_position_embeddings);
  u32(arch + ".embedding_length", c.hidden_size);
  u32(arch + ".block_count", c.num_hidden_layers);
  u32(arch + ".feed_forward_length", c.intermediate_size);
  u32(arch + ".attention.head_count", c.num_attention_heads);
  u32(arch + ".attention.head_count_kv", c.num_key_value_heads);
  w.add_f32(arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
  w.add_f32(arch + ".rope.freq_base", static_cast<float>(c.rope_theta));
  u32(arch + ".attention.key_length", c.head_dim);
  u32(arch + ".attention.value_length", c.head_dim);
  u32(arch + ".rope.dimension_count", a.rotary_dim);
  if (c.num_experts > 0) {
    u32(arch + ".expert_count", c.num_experts);
    u32(arch + ".expert_used_count", c.num_experts_per_tok);
  }
  if (c.moe_intermediate_size > 0)
    u32(arch + ".expert_feed_forward_length", c.moe_intermediate_size);
  if (a.shared_expert_intermediate > 0)
    u32(arch + ".expert_shared_feed_forward_length", a.shared_expert_intermediate);
  if (arch == "ernie4_5-moe" || arch == "glm4moe")
    u32(arch + ".leading_dense_block_count", c.first_sparse_layer);
  if (arch == "ernie4_5-moe") u32(arch + ".interleave_moe_layer_step", c.decoder_sparse_step);
  if (arch == "glm4moe") {
    const ExpertRouting& r = a.routing;
    u32(arch + ".expert_shared_count", c.moe_num_shared_experts);
    u32(arch + ".expert_gating_func", 2);  // llama.cpp's sigmoid
    w.add_f32(arch + ".expert_weights_scale", r.scale);
    w.add_bool(arch + ".expert_weights_norm", r.renormalize);
    // llama.cpp masks the experts of the groups not chosen with -inf, transformers with 0: the
    // same choice unless a chosen group's biased scores are negative.
    if (r.groups > 1) {
      u32(arch + ".expert_group_count", r.groups);
      u32(arch + ".expert_group_used_count", r.groups_used);
    }
  }
  if (c.rope_scaling.type == "linear") {
    w.add_string(arch + ".rope.scaling.type", "linear");
    w.add_f32(arch + ".rope.scaling.factor", static_cast<float>(c.rope_scaling.factor));
  }
  if (a.rope == RopeVariant::yarn) {
    w.add_string(arch + ".rope.scaling.type", "yarn");
    w.add_f32(arch + ".rope.scaling.factor", static_cast<float>(a.yarn.factor));
    u32(arch + ".rope.scaling.original_context_length", a.yarn.original_context);
    if (arch == "mistral3") {  // which reads the ramp's bounds and mscale_all_dim
      w.add_f32(arch + ".rope.scaling.yarn_beta_fast",
                static_cast<float>(c.rope_scaling.beta_fast));
      w.add_f32(arch + ".rope.scaling.yarn_beta_slow",
                static_cast<float>(c.rope_scaling.beta_slow));
      if (c.rope_scaling.mscale > 0 && c.rope_scaling.mscale_all_dim > 0)
        w.add_f32(arch + ".rope.scaling.yarn_log_multiplier",
                  static_cast<float>(c.rope_scaling.mscale_all_dim));
    }
  }
  if (a.query_scale_beta > 0)
    w.add_f32(arch + ".attention.temperature_scale", static_cast<float>(a.query_scale_beta));
  // Gemma: llama.cpp fixes the layer pattern (2 for Gemma 2, 6 for Gemma 3) and Gemma 3's
  // local rope base (10000); the window and the caps are keys.
  if (a.gemma) u32(arch + ".attention.sliding_window", c.sliding_window);
  if (arch == "olmo2" || arch == "exaone4") {
    const int64_t period = window_period(a, arch);
    check_windows(a, arch, period != 1);
    if (period != 1) {
      u32(arch + ".attention.sliding_window", c.sliding_window);
      u32(arch + ".attention.sliding_window_pattern", period);
    }
  }
  if (a.attention_softcap > 0) w.add_f32(arch + ".attn_logit_softcapping", a.attention_softcap);
  if (a.final_softcap > 0) w.add_f32(arch + ".final_logit_softcapping", a.final_softcap);
  // Granite's four scalars as the script writes them, from config.json (1 where absent).
  if (arch.starts_with("granite")) {
    const auto scale = [](double v) { return static_cast<float>(v > 0 ? v : 1.0); };
    w.add_f32(arch + ".embedding_scale", scale(c.embedding_multiplier));
    w.add_f32(arch + ".attention.scale", scale(c.attention_multiplier));
    w.add_f32(arch + ".residual_scale", scale(c.residual_multiplier));
    w.add_f32(arch + ".logit_scale", scale(c.logits_scaling));
    // llama.cpp's granite reads this key as its rotary embeddings' switch (on where absent).
    if (!a.layer_rope.front()) w.add_bool(arch + ".rope.scaling.finetuned", false);
  }
  if (arch == "phi3") {
    u32(arch + ".attention.sliding_window", a.sliding_window);
    u32(arch + ".rope.scaling.original_context_length",
        a.longrope_original_context > 0 ? a.longrope_original_context : c.max_position_embeddings);
    if (a.rope == RopeVariant::longrope)
      w.add_f32(arch + ".rope.scaling.attn_factor", a.rope_attention_factor);
  }
}

// llama.cpp's layer pattern and local rope base for Gemma, which GGUF cannot express otherwise.
void check_gemma_pattern(const Architecture& a, const std::string& arch) {
  const int64_t pattern = arch == "gemma2" ? 2 : 6;
  for (int64_t i = 0; i < a.config.num_hidden_layers; ++i)
    if ((a.layer_window[static_cast<size_t>(i)] > 0) != (i % pattern < pattern - 1))
      throw Error("export-gguf: layer " + std::to_string(i) + ": llama.cpp's " + arch +
                  " has every " + std::to_string(pattern) +
                  "th layer global, this model's layer pattern differs");
  if (arch == "gemma3" && a.local_rope_theta != 10000.0)
    throw Error("export-gguf: rope_local_base_freq " + std::to_string(a.local_rope_theta) +
                ": llama.cpp's gemma3 fixes it at 10000");
}

// llama.cpp's smollm3 leaves rotary embeddings out of every fourth layer, a step GGUF cannot
// change.
void check_nope_layers(const Architecture& a) {
  for (size_t i = 0; i < a.layer_rope.size(); ++i)
    if (a.layer_rope[i] != ((i + 1) % 4 != 0))
      throw Error("export-gguf: no_rope_layers: layer " + std::to_string(i) +
                  (a.layer_rope[i] ? " rotates" : " does not rotate") +
                  ", llama.cpp's smollm3 leaves rotary embeddings out of every fourth layer only");
}

// llama.cpp's ernie4_5-moe and glm4moe give every layer after the leading dense ones experts.
void check_sparse_layers(const Architecture& a, const std::string& arch) {
  for (int64_t i = 0; i < a.config.num_hidden_layers; ++i)
    if (a.sparse_layer(i) != (i >= a.config.first_sparse_layer))
      throw Error("export-gguf: layer " + std::to_string(i) + " is " +
                  (a.sparse_layer(i) ? "sparse" : "dense") + ": llama.cpp's " + arch +
                  " has experts in every layer after the leading dense ones");
}

// llama.cpp's yarn: the ramp's bounds rounded out, beta_fast 32 and beta_slow 1 (mistral3 reads
// them), and an attention factor it computes itself: 1 + 0.1 ln(factor), or for mistral3 with
// mscale_all_dim the ratio with mscale taken as 1.
void check_yarn(const Architecture& a, const std::string& arch) {
  const RopeScaling& r = a.config.rope_scaling;
  const auto refuse = [](const std::string& key, const std::string& why) {
    throw Error("export-gguf: rope_scaling." + key + ": " + why);
  };
  const bool mistral3 = arch == "mistral3";
  if (r.beta_fast != 32 && !mistral3) refuse("beta_fast", "llama.cpp runs 32 here");
  if (r.beta_slow != 1 && !mistral3) refuse("beta_slow", "llama.cpp runs 1 here");
  if (!r.truncate) refuse("truncate", "llama.cpp rounds the ramp's bounds");
  const auto mscale = [&](double m) {
    return a.yarn.factor <= 1 ? 1 : 0.1 * m * std::log(a.yarn.factor) + 1;
  };
  const bool log_multiplier = mistral3 && r.mscale > 0 && r.mscale_all_dim > 0;
  if (log_multiplier && r.mscale != 1) refuse("mscale", "llama.cpp's mistral3 runs 1 here");
  const double own = log_multiplier ? mscale(1) / mscale(r.mscale_all_dim) : mscale(1);
  if (std::abs(a.rope_attention_factor - own) > 1e-6 * own)
    refuse(r.attention_factor > 0 ? "attention_factor" : "factor",
           "llama.cpp's attention factor is " +
               std::string(log_multiplier ? "the mscale ratio " : "1 + 0.1 ln(factor) = ") +
               std::to_string(own) + ", this model's " + std::to_string(a.rope_attention_factor));
}

}  // namespace

GgufExportReport export_gguf(const GgufExportOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const ModelConfig config = ModelConfig::read(o.model_dir);
  const Checkpoint ckpt = Checkpoint::open_dir(o.model_dir);
  const Architecture a = Architecture::read(config, ckpt);
  const ModelConfig& c = a.config;
  const GgufArch arch = gguf_arch(c);
  const QuantizationConfig qc = QuantizationConfig::read(o.model_dir);
  if (fs::exists(o.output) && !o.replace_existing)
    throw Error("export-gguf: " + o.output + " exists (use --force to replace it)");

  GgufExportReport report;
  report.architecture = arch.name;
  const int64_t window = *std::max_element(a.layer_window.begin(), a.layer_window.end());
  if (window > 0 && !a.gemma && arch.name != "phi3" && arch.name != "olmo2" &&
      arch.name != "exaone4")
    report.notes.push_back("llama.cpp's " + arch.name +
                           " architecture has no sliding window: it matches "
                           "only for sequences up to sliding_window " +
                           std::to_string(window) + " tokens");

  GgufWriter w;
  w.add_string("general.architecture", arch.name);
  w.add_string("general.type", "model");
  w.add_string("general.name", fs::path(o.model_dir).filename().string());
  if (a.gemma) check_gemma_pattern(a, arch.name);
  if (a.rope == RopeVariant::yarn) check_yarn(a, arch.name);
  if (a.query_scale_beta > 0 && a.rope != RopeVariant::yarn)
    throw Error("export-gguf: llama_4_scaling_beta: llama.cpp scales queries with yarn only");
  if (arch.name == "smollm3") check_nope_layers(a);
  if (arch.name == "ernie4_5-moe" || arch.name == "glm4moe") check_sparse_layers(a, arch.name);
  if (arch.name == "granitemoe" &&
      std::find(a.layer_rope.begin(), a.layer_rope.end(), false) != a.layer_rope.end())
    throw Error(
        "export-gguf: position_embedding_type: llama.cpp's granitemoe rotates every layer, this "
        "model's layers have no rotary embeddings");
  if (arch.name == "ernie4_5" && c.mlp_bias)
    throw Error("export-gguf: use_bias: llama.cpp's ernie4_5 has no MLP biases");
  add_hparams(w, a, arch.name);

  // Float tensors of a quantized checkpoint keep their dtype (1-D ones become F32, as the script
  // writes them); an unquantized checkpoint becomes all F32.
  const auto dense_type = [&](const TensorView& t) {
    if (!qc.quantized() || t.shape.size() == 1) return GgmlType::F32;
    return ggml_type(t.dtype, t);
  };
  // Every tensor must have the shape config.json gives, as the model's loader checks: the GGUF
  // takes its shapes from the tensors and its hyperparameters from the config, so a mismatch
  // would make a file llama.cpp cannot load (and rows permuted by the config's head count).
  const auto vector_of = [&](const std::string& hf, int64_t size) -> const TensorView& {
    const TensorView& t = ckpt.tensor(hf);
    if (t.shape != std::vector<int64_t>{size})
      throw Error("export-gguf: tensor '" + hf + "' in " + t.file + ": expected shape [" +
                  std::to_string(size) + "] from config.json, got " + t.shape_string());
    return t;
  };
  const auto linear_tensors = [&](const LinearModule& m) {
    LinearTensors lt = find_linear_tensors(ckpt, m, qc.resolve(m.name));
    check_linear_shape(lt, m);
    if (m.has_bias && lt.bias == nullptr)
      throw Error("export-gguf: module '" + m.name + "': config.json implies a bias, but " +
                  ckpt.dir() + " holds no tensor '" + m.name + ".bias'");
    return lt;
  };
  // Gemma's norms multiply by 1 + w: llama.cpp's by the weight as stored, so it is stored + 1.
  const auto add_norm = [&](const std::string& hf, const std::string& gguf, int64_t size) {
    const TensorView& t = vector_of(hf, size);
    if (!a.gemma) return add_float_tensor(w, gguf, t, GgmlType::F32, nullptr);
    const FloatElements values(t);
    std::vector<float> shifted(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < shifted.size(); ++i) shifted[i] = 1.0f + values[static_cast<int64_t>(i)];
    w.add_tensor(gguf, GgmlType::F32, t.shape, [shifted](uint8_t* out, size_t bytes) {
      std::memcpy(out, shifted.data(), bytes);
    });
  };
  const auto add_f32_vector = [&](const std::string& name, const std::vector<double>& values) {
    std::vector<float> v(values.begin(), values.end());
    w.add_tensor(name, GgmlType::F32, {static_cast<int64_t>(v.size())},
                 [v](uint8_t* out, size_t bytes) { std::memcpy(out, v.data(), bytes); });
  };
  // A linear module: Q4_0 when int4, its float dtype when dense; its bias F32. llama's q and k
  // (qk_heads > 0) get their rows permuted. With `rows` (>= 0), rows [first, first + rows) alone as
  // a tensor of their own, without the bias (Granite's fused modules, which have none).
  const auto add_linear = [&](const LinearModule& m, const std::string& gguf, int64_t qk_heads,
                              int64_t first = 0, int64_t rows = -1) {
    std::function<int64_t(int64_t)> row_of;
    if (arch.permute_qk && qk_heads > 0)
      row_of = [rows = m.out_features, qk_heads](int64_t r) {
        return permuted_row(r, rows, qk_heads);
      };
    if (rows >= 0) row_of = [first](int64_t r) { return first + r; };
    const LinearTensors lt = linear_tensors(m);
    if (lt.scheme.kind == LinearKind::dense) {
      add_float_tensor(w, gguf + ".weight", *lt.weight, dense_type(*lt.weight), row_of, rows);
    } else {
      add_q4_0_tensor(w, gguf + ".weight", lt, row_of, rows);
      ++report.q4_0_tensors;
    }
    if (lt.bias != nullptr && rows < 0)
      add_float_tensor(w, gguf + ".bias", *lt.bias, GgmlType::F32, row_of);
  };

  // A sparse layer's experts' `which` module stacked into one tensor: Q4_0 when every expert's is
  // int4, else F32 (an unquantized checkpoint) or the dtype of the first. `rows` rows of each from
  // `first` (-1: all of them).
  const auto add_experts = [&](const std::vector<ExpertModules>& experts,
                               const std::function<LinearModule(const ExpertModules&)>& which,
                               const std::string& gguf, int64_t first = 0, int64_t rows = -1) {
    std::function<int64_t(int64_t)> row_of;
    if (first > 0) row_of = [first](int64_t r) { return first + r; };
    std::vector<GgufWriter::Producer> parts;
    std::optional<GgmlType> type;
    for (const ExpertModules& e : experts) {
      const LinearModule m = which(e);
      const LinearTensors lt = linear_tensors(m);
      const GgmlType t =
          lt.scheme.kind == LinearKind::dense ? dense_type(*lt.weight) : GgmlType::Q4_0;
      if (type && *type != t)
        throw Error("export-gguf: module '" + m.name +
                    "': the experts of a layer must all be stored alike (one GGUF tensor)");
      type = t;
      parts.push_back(t == GgmlType::Q4_0 ? q4_0_producer(lt, row_of, rows)
                                          : float_producer(*lt.weight, t, row_of, rows));
    }
    const LinearModule m = which(experts.front());
    w.add_tensor(
        gguf, *type,
        {static_cast<int64_t>(experts.size()), rows >= 0 ? rows : m.out_features, m.in_features},
        stacked_producer(std::move(parts)));
    if (*type == GgmlType::Q4_0) ++report.q4_0_tensors;
  };

  // In the script's order: embedding, rope factors, each layer, final norm, head.
  const TensorView& embed = ckpt.tensor(a.embedding);
  if (embed.shape != std::vector<int64_t>{c.vocab_size, c.hidden_size})
    throw Error("export-gguf: tensor '" + a.embedding + "' in " + embed.file +
                ": expected shape [" + std::to_string(c.vocab_size) + ", " +
                std::to_string(c.hidden_size) + "] from config.json, got " + embed.shape_string());
  add_float_tensor(w, "token_embd.weight", embed, dense_type(embed), nullptr);
  if (a.rope == RopeVariant::llama3) {
    const std::vector<float> factors = llama3_rope_factors(c);
    w.add_tensor(
        "rope_freqs.weight", GgmlType::F32, {static_cast<int64_t>(factors.size())},
        [factors](uint8_t* out, size_t bytes) { std::memcpy(out, factors.data(), bytes); });
  }
  if (a.rope == RopeVariant::longrope) {
    add_f32_vector("rope_factors_long.weight", c.rope_scaling.long_factor);
    add_f32_vector("rope_factors_short.weight", c.rope_scaling.short_factor);
  }
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const LayerModules l = a.layer(i);
    const std::string blk = "blk." + std::to_string(i) + ".";
    if (!l.input_norm.empty()) add_norm(l.input_norm, blk + "attn_norm.weight", c.hidden_size);
    if (a.qk_norm) {
      // OLMoE's and OLMo 2's norms span the whole projections, the others' one head.
      const int64_t q_size = a.qk_norm_whole ? c.num_attention_heads * c.head_dim : c.head_dim;
      const int64_t k_size = a.qk_norm_whole ? c.num_key_value_heads * c.head_dim : c.head_dim;
      add_norm(l.q_norm, blk + "attn_q_norm.weight", q_size);
      add_norm(l.k_norm, blk + "attn_k_norm.weight", k_size);
    }
    if (l.attention_input.size() == 1) {  // Phi-3: fused in the checkpoint and in llama.cpp
      add_linear(l.attention_input[0], blk + "attn_qkv", 0);
    } else {
      add_linear(l.attention_input.at(0), blk + "attn_q", c.num_attention_heads);
      add_linear(l.attention_input.at(1), blk + "attn_k", c.num_key_value_heads);
      add_linear(l.attention_input.at(2), blk + "attn_v", 0);
    }
    add_linear(l.attention_output, blk + "attn_output", 0);
    if (a.post_norms) {
      add_norm(l.post_attention_norm, blk + "post_attention_norm.weight", c.hidden_size);
      if (!l.pre_feedforward_norm.empty())
        add_norm(l.pre_feedforward_norm, blk + "ffn_norm.weight", c.hidden_size);
    } else {
      // GLM-4 MoE's MLP input norm is llama.cpp's attn_post_norm.
      add_norm(l.post_attention_norm,
               blk + (arch.name == "glm4moe" ? "post_attention_norm" : "ffn_norm") + ".weight",
               c.hidden_size);
    }
    if (!l.experts.empty()) {
      add_linear(l.router.at(0), blk + "ffn_gate_inp", 0);
      if (!l.router_bias.empty() && ckpt.find(l.router_bias) != nullptr) {
        const TensorView& bias = ckpt.tensor(l.router_bias);
        if (bias.numel() != a.experts)
          throw Error("export-gguf: tensor '" + l.router_bias + "' in " + bias.file +
                      ": expected " + std::to_string(a.experts) + " values, got " +
                      bias.shape_string());
        w.add_tensor(blk + "exp_probs_b.bias", GgmlType::F32, {a.experts},
                     float_producer(bias, GgmlType::F32, nullptr));
      }
      const auto input = [](size_t i) {
        return [i](const ExpertModules& e) { return e.input.at(i); };
      };
      if (l.experts[0].input.size() == 1) {  // Granite's stacked gate and up: the two halves
        const int64_t inter = a.expert_intermediate;
        add_experts(l.experts, input(0), blk + "ffn_gate_exps.weight", 0, inter);
        add_experts(l.experts, input(0), blk + "ffn_up_exps.weight", inter, inter);
      } else {
        add_experts(l.experts, input(0), blk + "ffn_gate_exps.weight");
        add_experts(l.experts, input(1), blk + "ffn_up_exps.weight");
      }
      add_experts(
          l.experts, [](const ExpertModules& e) { return e.output; }, blk + "ffn_down_exps.weight");
    }
    if (l.router.size() == 2) {  // Qwen2-MoE's shared-expert gate, as a vector
      const LinearModule& gate = l.router[1];
      const LinearTensors lt = linear_tensors(gate);
      if (lt.scheme.kind != LinearKind::dense)
        throw Error("export-gguf: module '" + gate.name +
                    "': llama.cpp's ffn_gate_inp_shexp is a float vector; this one is quantized");
      w.add_tensor(blk + "ffn_gate_inp_shexp.weight", GgmlType::F32, {gate.in_features},
                   float_producer(*lt.weight, GgmlType::F32, nullptr));
    }
    if (l.mlp_input.size() == 1 && arch.name.starts_with("granite")) {
      // Granite's shared_mlp.input_linear (gate rows first): llama.cpp's granite and granitemoe
      // read the two halves as ffn_gate and ffn_up (_shexp beside experts).
      const std::string suffix = l.experts.empty() ? "" : "_shexp";
      const int64_t inter = l.mlp_output.in_features;
      add_linear(l.mlp_input[0], blk + "ffn_gate" + suffix, 0, 0, inter);
      add_linear(l.mlp_input[0], blk + "ffn_up" + suffix, 0, inter, inter);
      add_linear(l.mlp_output, blk + "ffn_down" + suffix, 0);
    } else if (l.mlp_input.size() == 1) {  // Phi-3's gate_up_proj is llama.cpp's ffn_up, gate first
      add_linear(l.mlp_input[0], blk + "ffn_up", 0);
      add_linear(l.mlp_output, blk + "ffn_down", 0);
    } else if (!l.mlp_input.empty()) {
      const std::string suffix = l.experts.empty() ? "" : "_shexp";
      add_linear(l.mlp_input.at(0), blk + "ffn_gate" + suffix, 0);
      add_linear(l.mlp_input.at(1), blk + "ffn_up" + suffix, 0);
      add_linear(l.mlp_output, blk + "ffn_down" + suffix, 0);
    }
    if (a.post_norms)
      add_norm(l.post_feedforward_norm, blk + "post_ffw_norm.weight", c.hidden_size);
  }
  add_norm(a.final_norm, "output_norm.weight", c.hidden_size);
  if (a.head) add_linear(*a.head, "output", 0);

  // general.file_type: llama.cpp's llama_ftype of the main weights.
  const Dtype main_dtype = qc.quantized() ? embed.dtype : Dtype::F32;
  if (report.q4_0_tensors > 0) {
    report.file_type = "Q4_0";
    w.add_u32("general.file_type", 2);
  } else {
    report.file_type = std::string(dtype_name(main_dtype));
    w.add_u32("general.file_type", main_dtype == Dtype::BF16  ? 32
                                   : main_dtype == Dtype::F16 ? 1
                                                              : 0);
  }
  w.add_u32("general.quantization_version", 2);
  model::add_gguf_vocab(o.model_dir, c, w);

  // Written next to the output and renamed into place: a failure leaves nothing behind.
  const std::string staging = o.output + ".tmp-" + std::to_string(::getpid());
  try {
    w.write(staging);
    fs::rename(staging, o.output);
  } catch (...) {
    std::error_code ec;
    fs::remove(staging, ec);
    throw;
  }
  report.tensors = static_cast<int64_t>(w.tensor_count());
  report.unused_tensors = unused_tensors(ckpt);
  report.bytes = fs::file_size(o.output);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace dq4
