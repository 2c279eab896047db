// A Llama-family checkpoint -> GGUF, tensor by tensor: names and metadata as
// convert_hf_to_gguf.py writes them, int4 group-32 modules re-encoded as Q4_0 blocks.

#include "dq4/gguf_export.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <numbers>

#include "dq4/checkpoint.h"
#include "dq4/error.h"
#include "dq4/gguf_writer.h"
#include "dq4/half.h"
#include "dq4/int4_codec.h"
#include "dq4/linear_tensors.h"
#include "dq4/model_config.h"
#include "dq4/quant_config.h"
#include "gguf_vocab.h"

namespace dq4 {
namespace {

namespace fs = std::filesystem;

// How the architecture maps onto llama.cpp's.
struct GgufArch {
  std::string name;
  bool permute_qk = false;  // llama.cpp's "llama" rotates interleaved pairs, HF rotates halves
};

GgufArch gguf_arch(const ModelConfig& c, const std::string& file) {
  if (c.hidden_act != "silu")
    throw Error("export-gguf: " + file + ": hidden_act '" + c.hidden_act + "' is not silu");
  if (c.partial_rotary_factor != 1.0)
    throw Error("export-gguf: " + file + ": partial_rotary_factor " +
                std::to_string(c.partial_rotary_factor) + " is not exported");
  if (!c.rope_scaling.other_keys.empty())
    throw Error("export-gguf: " + file + ": " + c.rope_scaling.other_keys[0] + " is not exported");
  const std::string& rope = c.rope_scaling.type;
  if (!rope.empty() && rope != "linear" && rope != "llama3")
    throw Error("export-gguf: " + file + ": rope_scaling type '" + rope +
                "' is not exported (none, linear, llama3)");
  if (c.architecture == "LlamaForCausalLM" || c.architecture == "MistralForCausalLM")
    return {"llama", true};
  if (c.architecture == "Qwen2ForCausalLM") return {"qwen2", false};
  if (c.architecture == "Qwen3ForCausalLM") return {"qwen3", false};
  throw Error("export-gguf: " + file + ": architecture '" + c.architecture + "' is not exported");
}

// HF module / tensor names -> GGUF tensor names.
std::string gguf_name(const std::string& hf) {
  static const std::pair<const char*, const char*> kLayerParts[] = {
      {"input_layernorm", "attn_norm"},    {"post_attention_layernorm", "ffn_norm"},
      {"self_attn.q_proj", "attn_q"},      {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},      {"self_attn.o_proj", "attn_output"},
      {"self_attn.q_norm", "attn_q_norm"}, {"self_attn.k_norm", "attn_k_norm"},
      {"mlp.gate_proj", "ffn_gate"},       {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"}};
  if (hf == "model.embed_tokens") return "token_embd";
  if (hf == "model.norm") return "output_norm";
  if (hf == "lm_head") return "output";
  const std::string prefix = "model.layers.";
  if (hf.starts_with(prefix)) {
    const size_t dot = hf.find('.', prefix.size());
    const std::string layer = hf.substr(prefix.size(), dot - prefix.size());
    const std::string part = hf.substr(dot + 1);
    for (const auto& [from, to] : kLayerParts)
      if (part == from) return "blk." + layer + "." + to;
  }
  throw Error("export-gguf: no GGUF name for '" + hf + "'");
}

// Source row of output row `r` after llama.cpp's q/k permutation: within each head of `d` rows,
// HF's halves [x0..x(d/2-1) | y0..] become interleaved pairs (x0 y0 x1 y1 ...).
int64_t permuted_row(int64_t r, int64_t rows, int64_t heads) {
  const int64_t d = rows / heads, head = r / d, within = r % d;
  return head * d + (within % 2) * (d / 2) + within / 2;
}

float element(const TensorView& t, int64_t i) {
  switch (t.dtype) {
    case Dtype::F32:
      return t.as<float>()[i];
    case Dtype::BF16:
      return bf16_to_f32(t.as<uint16_t>(Dtype::BF16)[i]);
    case Dtype::F16:
      return f16_to_f32(t.as<uint16_t>(Dtype::F16)[i]);
    default:
      throw Error("export-gguf: tensor '" + t.name + "' in " + t.file + " is " +
                  std::string(dtype_name(t.dtype)) + ", not F32, BF16 or F16");
  }
}

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

// A float tensor as `type` (F32, BF16 or F16), rows taken through `row_of`.
void add_float_tensor(GgufWriter& w, const std::string& name, const TensorView& t, GgmlType type,
                      std::function<int64_t(int64_t)> row_of) {
  (void)ggml_type(t.dtype, t);  // refuses non-float dtypes now, not while writing
  const int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1;
  const int64_t cols = t.numel() / rows;
  w.add_tensor(name, type, t.shape, [&t, type, rows, cols, row_of](uint8_t* out, size_t) {
    const size_t size = type == GgmlType::F32 ? 4 : 2;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t src = row_of ? row_of(r) : r;
      for (int64_t c = 0; c < cols; ++c) {
        const float v = element(t, src * cols + c);
        uint8_t* dst = out + static_cast<size_t>(r * cols + c) * size;
        if (type == GgmlType::F32) {
          std::memcpy(dst, &v, 4);
        } else {
          const uint16_t h = type == GgmlType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
          std::memcpy(dst, &h, 2);
        }
      }
    }
  });
}

// An int4 group-32 module as Q4_0: the same values, the same scales (refused unless f16 holds
// them exactly).
void add_q4_0_tensor(GgufWriter& w, const std::string& name, const LinearTensors& lt,
                     std::function<int64_t(int64_t)> row_of) {
  const std::string& module = lt.module;
  if (lt.scheme.group_size != kQ4_0BlockSize)
    throw Error("export-gguf: module '" + module + "': " +
                (lt.scheme.group_size == 0 ? std::string("channelwise scales")
                                           : "group size " + std::to_string(lt.scheme.group_size)) +
                ": Q4_0 holds groups of 32 only");
  if (lt.k % kQ4_0BlockSize != 0)
    throw Error("export-gguf: module '" + module + "': in_features " + std::to_string(lt.k) +
                " is not a multiple of 32 (Q4_0 blocks)");
  const int64_t n = lt.n, k = lt.k, groups = k / kQ4_0BlockSize;
  const TensorView& scales = *lt.weight_scale;
  // Check every scale before the file is started.
  for (int64_t i = 0; i < n * groups; ++i) {
    const float s = element(scales, i);
    if (f16_to_f32(f32_to_f16(s)) != s)
      throw Error("export-gguf: tensor '" + scales.name + "' [" + std::to_string(i / groups) +
                  ", " + std::to_string(i % groups) + "] = " + std::to_string(s) +
                  " is not exactly representable in f16 (Q4_0 scales are f16)");
  }
  w.add_tensor(name, GgmlType::Q4_0, {n, k},
               [lt, n, k, groups, row_of, module](uint8_t* out, size_t) {
                 std::vector<int8_t> row(static_cast<size_t>(k));
                 const int64_t words = (k + 7) / 8;
                 for (int64_t r = 0; r < n; ++r) {
                   const int64_t src = row_of ? row_of(r) : r;
                   if (lt.weight_packed != nullptr)
                     unpack_int4_rows(lt.weight_packed->as<int32_t>().data() + src * words, 1, k,
                                      row.data());
                   else
                     std::memcpy(row.data(), lt.weight->as<int8_t>().data() + src * k,
                                 static_cast<size_t>(k));
                   for (int64_t g = 0; g < groups; ++g) {
                     uint8_t* block = out + static_cast<size_t>(r * groups + g) * kQ4_0BlockBytes;
                     const uint16_t d = f32_to_f16(element(*lt.weight_scale, src * groups + g));
                     std::memcpy(block, &d, 2);
                     const int8_t* q = row.data() + g * kQ4_0BlockSize;
                     for (int j = 0; j < 16; ++j) {
                       if (q[j] < -8 || q[j] > 7 || q[j + 16] < -8 || q[j + 16] > 7)
                         throw Error("export-gguf: module '" + module + "' row " +
                                     std::to_string(src) + ": int4 value outside [-8, 7]");
                       block[2 + j] = static_cast<uint8_t>((q[j] + 8) | ((q[j + 16] + 8) << 4));
                     }
                   }
                 }
               });
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

void add_hparams(GgufWriter& w, const ModelConfig& c, const std::string& arch) {
  const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  w.add_u32(arch + ".vocab_size", u32(c.vocab_size));
  w.add_u32(arch + ".context_length", u32(c.max_position_embeddings));
  w.add_u32(arch + ".embedding_length", u32(c.hidden_size));
  w.add_u32(arch + ".block_count", u32(c.num_hidden_layers));
  w.add_u32(arch + ".feed_forward_length", u32(c.intermediate_size));
  w.add_u32(arch + ".attention.head_count", u32(c.num_attention_heads));
  w.add_u32(arch + ".attention.head_count_kv", u32(c.num_key_value_heads));
  w.add_f32(arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
  w.add_f32(arch + ".rope.freq_base", static_cast<float>(c.rope_theta));
  w.add_u32(arch + ".attention.key_length", u32(c.head_dim));
  w.add_u32(arch + ".attention.value_length", u32(c.head_dim));
  w.add_u32(arch + ".rope.dimension_count", u32(c.head_dim));
  if (c.rope_scaling.type == "linear") {
    w.add_string(arch + ".rope.scaling.type", "linear");
    w.add_f32(arch + ".rope.scaling.factor", static_cast<float>(c.rope_scaling.factor));
  }
}

}  // namespace

GgufExportReport export_gguf(const GgufExportOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const std::string config_file = o.model_dir + "/config.json";
  const ModelConfig c = ModelConfig::read(o.model_dir);
  const GgufArch arch = gguf_arch(c, config_file);
  const QuantizationConfig qc = QuantizationConfig::read(o.model_dir);
  const Checkpoint ckpt = Checkpoint::open_dir(o.model_dir);
  if (fs::exists(o.output) && !o.replace_existing)
    throw Error("export-gguf: " + o.output + " exists (use --force to replace it)");

  GgufExportReport report;
  report.architecture = arch.name;
  if (c.sliding_window > 0 && arch.name == "llama")
    report.notes.push_back(
        "llama.cpp's llama architecture has no sliding window: it matches "
        "only for sequences up to sliding_window " +
        std::to_string(c.sliding_window) + " tokens");

  GgufWriter w;
  w.add_string("general.architecture", arch.name);
  w.add_string("general.type", "model");
  w.add_string("general.name", fs::path(o.model_dir).filename().string());
  add_hparams(w, c, arch.name);

  // Tensors in GGUF order (as the script emits them: embedding, per layer, output).
  const auto dense_type = [&](const TensorView& t) {
    if (!qc.quantized() || t.shape.size() == 1) return GgmlType::F32;
    return ggml_type(t.dtype, t);
  };
  Dtype main_dtype = Dtype::F32;
  const TensorView& embed = ckpt.tensor("model.embed_tokens.weight");
  add_float_tensor(w, "token_embd.weight", embed, dense_type(embed), nullptr);
  if (qc.quantized()) main_dtype = embed.dtype;
  if (c.rope_scaling.type == "llama3") {
    const std::vector<float> factors = llama3_rope_factors(c);
    w.add_tensor(
        "rope_freqs.weight", GgmlType::F32, {static_cast<int64_t>(factors.size())},
        [factors](uint8_t* out, size_t bytes) { std::memcpy(out, factors.data(), bytes); });
  }
  for (const LinearModule& m : linear_modules(c)) {
    if (m.name.ends_with("self_attn.q_proj") && m.name.starts_with("model.layers.")) {
      const std::string prefix =
          m.name.substr(0, m.name.size() - std::string("self_attn.q_proj").size());
      const TensorView& norm = ckpt.tensor(prefix + "input_layernorm.weight");
      add_float_tensor(w, gguf_name(prefix + "input_layernorm") + ".weight", norm, GgmlType::F32,
                       nullptr);
      if (c.architecture == "Qwen3ForCausalLM")
        for (const char* qk : {"self_attn.q_norm", "self_attn.k_norm"}) {
          const TensorView& t = ckpt.tensor(prefix + qk + ".weight");
          add_float_tensor(w, gguf_name(prefix + qk) + ".weight", t, GgmlType::F32, nullptr);
        }
    }
    std::function<int64_t(int64_t)> row_of;
    if (arch.permute_qk && (m.name.ends_with("q_proj") || m.name.ends_with("k_proj"))) {
      const int64_t heads =
          m.name.ends_with("q_proj") ? c.num_attention_heads : c.num_key_value_heads;
      row_of = [rows = m.out_features, heads](int64_t r) { return permuted_row(r, rows, heads); };
    }
    const LinearScheme scheme = qc.resolve(m.name);
    const LinearTensors lt = find_linear_tensors(ckpt, m.name, scheme);
    const std::string name = gguf_name(m.name);
    if (scheme.kind == LinearKind::dense) {
      add_float_tensor(w, name + ".weight", *lt.weight, dense_type(*lt.weight), row_of);
    } else {
      add_q4_0_tensor(w, name + ".weight", lt, row_of);
      ++report.q4_0_tensors;
    }
    if (lt.bias != nullptr) add_float_tensor(w, name + ".bias", *lt.bias, GgmlType::F32, row_of);
    if (m.name.ends_with("mlp.up_proj")) {
      const std::string prefix =
          m.name.substr(0, m.name.size() - std::string("mlp.up_proj").size());
      const TensorView& norm = ckpt.tensor(prefix + "post_attention_layernorm.weight");
      add_float_tensor(w, gguf_name(prefix + "post_attention_layernorm") + ".weight", norm,
                       GgmlType::F32, nullptr);
    }
  }
  add_float_tensor(w, "output_norm.weight", ckpt.tensor("model.norm.weight"), GgmlType::F32,
                   nullptr);

  // general.file_type: llama.cpp's llama_ftype of the main weights.
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
  quant::add_gguf_vocab(o.model_dir, c, w);

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
  report.bytes = fs::file_size(o.output);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace dq4
