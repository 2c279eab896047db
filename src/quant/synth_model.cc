// Synthetic Llama-shaped checkpoints, streamed chunk by chunk from a counter-based generator.

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "dq4/error.h"
#include "dq4/half.h"
#include "dq4/synth.h"
#include "dq4/thread_pool.h"
#include "model_files.h"
#include "staging_dir.h"

namespace dq4 {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kChunkElements = uint64_t{1} << 22;  // per append: 4M values
constexpr uint64_t kTaskElements = uint64_t{1} << 16;   // per pool task

uint64_t mix64(uint64_t z) {  // splitmix64's finalizer
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t tensor_key(uint64_t seed, std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of the name
  for (const unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return mix64(h ^ mix64(seed));
}

float value_at(uint64_t key, uint64_t index) {
  const uint64_t bits = mix64(key + 0x9e3779b97f4a7c15ull * (index + 1));
  // Four 16-bit uniforms in (0, 1): their sum has mean 2 and variance 1/3.
  float sum = 0.0f;
  for (int i = 0; i < 4; ++i) sum += (static_cast<float>((bits >> (16 * i)) & 0xffff) + 0.5f);
  constexpr float kStd = 0.02f;
  return (sum * (1.0f / 65536.0f) - 2.0f) * (1.7320508f * kStd);
}

bool is_norm(std::string_view name) {
  return name.size() >= 11 && name.substr(name.size() - 11) == "norm.weight";
}

void store(Dtype dtype, float v, uint8_t* out) {
  if (dtype == Dtype::F32) {
    std::memcpy(out, &v, 4);
    return;
  }
  const uint16_t bits = dtype == Dtype::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
  std::memcpy(out, &bits, 2);
}

std::string torch_dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::F32:
      return "float32";
    case Dtype::BF16:
      return "bfloat16";
    case Dtype::F16:
      return "float16";
    default:
      throw Error("synth: dtype " + std::string(dtype_name(dtype)) +
                  " is not one of F32, BF16, F16");
  }
}

void check_shapes(const ModelConfig& c) {
  const std::pair<const char*, int64_t> sizes[] = {
      {"hidden_size", c.hidden_size},
      {"intermediate_size", c.intermediate_size},
      {"num_hidden_layers", c.num_hidden_layers},
      {"num_attention_heads", c.num_attention_heads},
      {"num_key_value_heads", c.num_key_value_heads},
      {"head_dim", c.head_dim},
      {"vocab_size", c.vocab_size},
      {"max_position_embeddings", c.max_position_embeddings}};
  for (const auto& [field, value] : sizes)
    if (value <= 0)
      throw Error("synth: " + std::string(field) + " must be positive, got " +
                  std::to_string(value));
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    throw Error("synth: num_key_value_heads " + std::to_string(c.num_key_value_heads) +
                " does not divide num_attention_heads " + std::to_string(c.num_attention_heads));
}

std::vector<TensorSpec> model_tensors(const ModelConfig& c, Dtype dtype) {
  std::vector<TensorSpec> tensors{
      {"model.embed_tokens.weight", dtype, {c.vocab_size, c.hidden_size}},
      {"model.norm.weight", dtype, {c.hidden_size}}};
  for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
    const std::string prefix = "model.layers." + std::to_string(layer) + ".";
    tensors.push_back({prefix + "input_layernorm.weight", dtype, {c.hidden_size}});
    tensors.push_back({prefix + "post_attention_layernorm.weight", dtype, {c.hidden_size}});
  }
  for (const LinearModule& m : linear_modules(c)) {
    tensors.push_back({m.name + ".weight", dtype, {m.out_features, m.in_features}});
    if (m.has_bias) tensors.push_back({m.name + ".bias", dtype, {m.out_features}});
  }
  std::sort(tensors.begin(), tensors.end(),
            [](const TensorSpec& a, const TensorSpec& b) { return a.name < b.name; });
  return tensors;
}

nlohmann::ordered_json config_json(const SynthOptions& o) {
  const ModelConfig& c = o.config;
  nlohmann::ordered_json j;
  j["architectures"] = {"LlamaForCausalLM"};
  j["model_type"] = "llama";
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling"] = nullptr;
  j["hidden_act"] = "silu";
  j["attention_bias"] = c.attention_bias;
  j["attention_dropout"] = 0.0;
  j["mlp_bias"] = c.mlp_bias;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["bos_token_id"] = o.bos_token_id;
  j["eos_token_id"] = o.eos_token_id;
  j["initializer_range"] = 0.02;
  j["pretraining_tp"] = 1;
  j["use_cache"] = true;
  j["torch_dtype"] = torch_dtype_name(o.dtype);
  return j;
}

// Writes one tensor in chunks, each filled in parallel.
void write_tensor(const TensorSpec& t, uint64_t seed, CheckpointWriter& writer,
                  std::vector<uint8_t>& chunk) {
  const uint64_t key = tensor_key(seed, t.name);
  const bool ones = is_norm(t.name);
  const size_t element_bytes = dtype_size(t.dtype);
  const uint64_t total = t.bytes() / element_bytes;
  for (uint64_t begin = 0; begin < total; begin += kChunkElements) {
    const uint64_t count = std::min(kChunkElements, total - begin);
    chunk.resize(count * element_bytes);
    const int64_t tasks = static_cast<int64_t>((count + kTaskElements - 1) / kTaskElements);
    ThreadPool::global().run(tasks, [&](int64_t task) {
      const uint64_t first = static_cast<uint64_t>(task) * kTaskElements;
      const uint64_t last = std::min(count, first + kTaskElements);
      for (uint64_t i = first; i < last; ++i)
        store(t.dtype, ones ? 1.0f : value_at(key, begin + i), chunk.data() + i * element_bytes);
    });
    writer.append(chunk.data(), chunk.size());
  }
}

}  // namespace

float synthetic_value(uint64_t seed, std::string_view name, uint64_t index) {
  return value_at(tensor_key(seed, name), index);
}

SynthOptions synth_preset(std::string_view name) {
  SynthOptions o;
  ModelConfig& c = o.config;
  c.architecture = "LlamaForCausalLM";
  c.model_type = "llama";
  c.rms_norm_eps = 1e-5;
  if (name == "llama-1b") {
    c.hidden_size = 2048;
    c.intermediate_size = 8192;
    c.num_hidden_layers = 16;
    c.num_attention_heads = 32;
    c.num_key_value_heads = 8;
    c.head_dim = 64;
    c.vocab_size = 128256;
    c.max_position_embeddings = 131072;
    c.rope_theta = 500000.0;
    c.tie_word_embeddings = true;
    o.bos_token_id = 128000;
    o.eos_token_id = 128001;
  } else if (name == "tiny") {
    c.hidden_size = 96;
    c.intermediate_size = 200;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 24;
    c.vocab_size = 256;
    c.max_position_embeddings = 256;
    c.rope_theta = 10000.0;
    c.tie_word_embeddings = false;
  } else {
    throw Error("synth: unknown preset '" + std::string(name) + "' (presets: llama-1b, tiny)");
  }
  o.dtype = Dtype::BF16;
  c.torch_dtype = "bfloat16";
  return o;
}

SynthReport write_synthetic_model(const SynthOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  check_shapes(options.config);
  const nlohmann::ordered_json config = config_json(options);  // also checks the dtype
  const std::vector<TensorSpec> tensors = model_tensors(options.config, options.dtype);
  if (!options.tokenizer_dir.empty() && !fs::is_directory(options.tokenizer_dir))
    throw Error("synth: tokenizer directory " + options.tokenizer_dir + " does not exist");

  quant::StagingDir staging(options.output_dir, options.replace_existing, options.notice);
  CheckpointWriter writer(staging.path(), tensors, options.max_shard_bytes);
  WriteProgress progress{0, static_cast<int64_t>(tensors.size()), 0, writer.total_data_bytes()};
  std::vector<uint8_t> chunk;
  SynthReport report;
  for (const TensorSpec& t : tensors) {
    write_tensor(t, options.seed, writer, chunk);
    report.parameters += t.bytes() / dtype_size(t.dtype);
    ++progress.tensors_done;
    progress.bytes_done = writer.data_bytes_written();
    if (options.progress) options.progress(progress);
  }
  writer.finish();
  quant::write_config_json(config, staging.path());
  if (!options.tokenizer_dir.empty() &&
      quant::copy_tokenizer_files(options.tokenizer_dir, staging.path()) == 0)
    throw Error("synth: " + options.tokenizer_dir + " holds no tokenizer files");
  staging.commit();
  report.bytes_written = quant::directory_bytes(options.output_dir);

  report.output_dir = options.output_dir;
  report.tensors = static_cast<int64_t>(tensors.size());
  report.shards = writer.shard_count();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace dq4
