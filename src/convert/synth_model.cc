// Synthetic Llama-family checkpoints, streamed chunk by chunk from a counter-based generator.

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "dq4/convert/synth.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/half.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/model/architecture.h"
#include "model_files.h"
#include "staging_dir.h"
#include "synth_tokenizer.h"

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

// ~N(0, 1): four 16-bit uniforms in (0, 1), whose sum has mean 2 and variance 1/3.
float unit_value_at(uint64_t key, uint64_t index) {
  const uint64_t bits = mix64(key + 0x9e3779b97f4a7c15ull * (index + 1));
  float sum = 0.0f;
  for (int i = 0; i < 4; ++i) sum += (static_cast<float>((bits >> (16 * i)) & 0xffff) + 0.5f);
  return (sum * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// What a tensor's values are: value = offset + scale * unit.
struct ValueRule {
  float offset = 0, scale = 0;
};

ValueRule value_rule(const SynthOptions& o, std::string_view name) {
  // Gemma's norms multiply by 1 + w: w near 0 is a norm near 1.
  const bool gemma = o.config.architecture.starts_with("Gemma");
  if (ends_with(name, "norm.weight")) return {gemma ? 0.0f : 1.0f, o.norm_spread};
  if (ends_with(name, ".bias")) return {0.0f, o.bias_std};
  return {0.0f, o.weight_std};
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
  const Architecture a = Architecture::from_config(c, "synth config");
  std::vector<TensorSpec> tensors{{a.embedding, dtype, {c.vocab_size, c.hidden_size}},
                                  {a.final_norm, dtype, {c.hidden_size}}};
  // The selection biases in f32 as transformers saves them (Ernie 4.5's as one row), and Ernie 4.5
  // MoE's routers too.
  const bool ernie = c.architecture == "Ernie4_5_MoeForCausalLM";
  std::set<std::string> f32_modules;
  for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
    const LayerModules m = a.layer(layer);
    for (const std::string& norm :
         {m.input_norm, m.post_attention_norm, m.pre_feedforward_norm, m.post_feedforward_norm})
      if (!norm.empty()) tensors.push_back({norm, dtype, {c.hidden_size}});
    if (a.qk_norm) {  // RMSNorm of each head's q and k (OLMoE: of the whole projections)
      const bool whole = a.qk_norm_whole;
      tensors.push_back(
          {m.q_norm, dtype, {whole ? c.num_attention_heads * c.head_dim : c.head_dim}});
      tensors.push_back(
          {m.k_norm, dtype, {whole ? c.num_key_value_heads * c.head_dim : c.head_dim}});
    }
    if (!m.router_bias.empty()) {
      tensors.push_back(
          {m.router_bias, Dtype::F32,
           ernie ? std::vector<int64_t>{1, a.experts} : std::vector<int64_t>{a.experts}});
      if (ernie) f32_modules.insert(m.router.at(0).name);
    }
  }
  for (const LinearModule& m : a.linear_modules()) {
    const Dtype t = f32_modules.contains(m.name) ? Dtype::F32 : dtype;
    if (m.expert > 0) continue;  // stacked experts: one tensor, written with the first
    if (m.expert == 0) {
      tensors.push_back(
          {m.name + ".weight", t, {m.stacked_experts, m.out_features, m.in_features}});
      continue;
    }
    tensors.push_back({m.name + ".weight", t, {m.out_features, m.in_features}});
    if (m.has_bias) tensors.push_back({m.name + ".bias", dtype, {m.out_features}});
  }
  std::sort(tensors.begin(), tensors.end(),
            [](const TensorSpec& a, const TensorSpec& b) { return a.name < b.name; });
  return tensors;
}

nlohmann::ordered_json rope_scaling_json(const RopeScaling& r) {
  if (r.type.empty()) return nullptr;
  nlohmann::ordered_json j;
  j["factor"] = r.factor;
  if (r.type == "llama3") {
    j["high_freq_factor"] = r.high_freq_factor;
    j["low_freq_factor"] = r.low_freq_factor;
    j["original_max_position_embeddings"] = r.original_max_position_embeddings;
  }
  if (r.type == "yarn") {
    j["original_max_position_embeddings"] = r.original_max_position_embeddings;
    if (r.mscale > 0) j["mscale"] = r.mscale;
    if (r.mscale_all_dim > 0) j["mscale_all_dim"] = r.mscale_all_dim;
  }
  if (r.llama_4_scaling_beta > 0) j["llama_4_scaling_beta"] = r.llama_4_scaling_beta;
  if (r.type == "longrope") {
    j.erase("factor");
    j["long_factor"] = r.long_factor;
    j["short_factor"] = r.short_factor;
  }
  j["rope_type"] = r.type;
  return j;
}

nlohmann::ordered_json nullable(double v) {
  return v > 0 ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json token_ids_json(const ModelConfig& c) {
  if (c.eos_token_ids.empty()) return nullptr;
  if (c.eos_token_ids.size() == 1) return c.eos_token_ids[0];
  return c.eos_token_ids;
}

nlohmann::ordered_json config_json(const SynthOptions& o) {
  const ModelConfig& c = o.config;
  const bool qwen = c.architecture.starts_with("Qwen");
  nlohmann::ordered_json j;
  j["architectures"] = {c.architecture};
  j["model_type"] = c.model_type;
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
  j["rope_scaling"] = rope_scaling_json(c.rope_scaling);
  j["hidden_act"] = c.hidden_act;
  // Qwen2's config has no attention_bias: its q/k/v biases are implied.
  if (c.architecture != "Qwen2ForCausalLM" && c.architecture != "Qwen2MoeForCausalLM")
    j["attention_bias"] = c.attention_bias;
  j["attention_dropout"] = 0.0;
  if (c.architecture == "LlamaForCausalLM") j["mlp_bias"] = c.mlp_bias;
  const bool ernie_moe = c.architecture == "Ernie4_5_MoeForCausalLM";
  if (c.architecture == "Ernie4_5ForCausalLM" || ernie_moe) {  // one switch for every bias
    j.erase("attention_bias");
    j["use_bias"] = c.attention_bias;
  }
  if (qwen) {
    // As transformers writes Qwen configs: the window (when on) from max_window_layers on, and
    // each layer's type.
    j["use_sliding_window"] = c.sliding_window > 0;
    j["max_window_layers"] = c.num_hidden_layers;
    j["layer_types"] =
        std::vector<std::string>(static_cast<size_t>(c.num_hidden_layers), "full_attention");
  }
  if (qwen || c.architecture == "MistralForCausalLM" || c.architecture == "MixtralForCausalLM")
    j["sliding_window"] = c.sliding_window > 0 ? nlohmann::ordered_json(c.sliding_window) : nullptr;
  if (ernie_moe) {  // as the released configs name the mixture's fields
    j["moe_num_experts"] = c.num_experts;
    j["moe_k"] = c.num_experts_per_tok;
    j["moe_intermediate_size"] = c.moe_intermediate_size;
    j["moe_num_shared_experts"] = c.moe_num_shared_experts;
    j["moe_layer_start_index"] = c.first_sparse_layer;
    j["moe_layer_end_index"] =
        c.last_sparse_layer >= 0 ? c.last_sparse_layer : c.num_hidden_layers - 1;
    j["moe_layer_interval"] = c.decoder_sparse_step;
    j["moe_norm_min"] = c.moe_norm_min;
    j["moe_use_aux_free"] = c.moe_use_aux_free;
  } else if (c.architecture == "Glm4MoeForCausalLM") {  // as GLM-4.5's config
    j["n_routed_experts"] = c.num_experts;
    j["num_experts_per_tok"] = c.num_experts_per_tok;
    j["moe_intermediate_size"] = c.moe_intermediate_size;
    j["n_shared_experts"] = c.moe_num_shared_experts;
    j["first_k_dense_replace"] = c.first_sparse_layer;
    j["n_group"] = c.expert_groups;
    j["topk_group"] = c.expert_groups_used;
    j["routed_scaling_factor"] = c.routed_scaling_factor;
    j["norm_topk_prob"] = c.norm_topk_prob;
    j["use_qk_norm"] = c.use_qk_norm;
    j["partial_rotary_factor"] = c.partial_rotary_factor;
    j["num_nextn_predict_layers"] = c.num_nextn_predict_layers;
  } else if (c.num_experts > 0) {
    const bool qwen_moe =
        c.architecture == "Qwen2MoeForCausalLM" || c.architecture == "Qwen3MoeForCausalLM";
    // Mixtral and Granite always renormalize: their configs have no norm_topk_prob.
    const bool local =
        c.architecture == "MixtralForCausalLM" || c.architecture.starts_with("Granite");
    j[local ? "num_local_experts" : "num_experts"] = c.num_experts;
    j["num_experts_per_tok"] = c.num_experts_per_tok;
    if (!local) j["norm_topk_prob"] = c.norm_topk_prob;
    if (c.architecture == "GraniteMoeSharedForCausalLM")
      j["shared_intermediate_size"] = c.shared_intermediate_size;
    if (qwen_moe) {
      j["moe_intermediate_size"] = c.moe_intermediate_size;
      j["decoder_sparse_step"] = c.decoder_sparse_step;
      j["mlp_only_layers"] = c.mlp_only_layers;
    }
    if (c.shared_expert_intermediate_size > 0)
      j["shared_expert_intermediate_size"] = c.shared_expert_intermediate_size;
    j["output_router_logits"] = false;
    j["router_aux_loss_coef"] = 0.001;
  }
  if (c.architecture.starts_with("Gemma")) {
    j["hidden_activation"] = c.hidden_act;
    j["query_pre_attn_scalar"] = c.query_pre_attn_scalar;
    j["sliding_window"] = c.sliding_window;
    j["attn_logit_softcapping"] = nullable(c.attn_logit_softcapping);
    j["final_logit_softcapping"] = nullable(c.final_logit_softcapping);
    if (c.rope_local_base_freq > 0) j["rope_local_base_freq"] = c.rope_local_base_freq;
    if (c.sliding_window_pattern > 0) j["sliding_window_pattern"] = c.sliding_window_pattern;
  }
  if (c.architecture == "SmolLM3ForCausalLM") {
    j["no_rope_layers"] = c.no_rope_layers;
    j["no_rope_layer_interval"] = c.no_rope_layer_interval;
    j["use_sliding_window"] = false;
    j["sliding_window"] = nullptr;
  }
  if (const std::string& letters = c.sliding_window_layout; !letters.empty()) {
    // OLMo 3, EXAONE 4, as their released configs: each layer's type from the pattern's letters
    // repeated (L sliding, G global); EXAONE 4's 32B writes the letters too.
    j["sliding_window"] = c.sliding_window > 0 ? nlohmann::ordered_json(c.sliding_window) : nullptr;
    if (c.architecture == "Exaone4ForCausalLM") j["sliding_window_pattern"] = letters;
    std::vector<std::string> types;
    for (size_t i = 0; i < static_cast<size_t>(c.num_hidden_layers); ++i)
      types.emplace_back(c.sliding_window > 0 && letters[i % letters.size()] == 'L'
                             ? "sliding_attention"
                             : "full_attention");
    j["layer_types"] = types;
  }
  if (c.model_type == "ministral3") {  // as transformers 5 writes it: the rope in rope_parameters
    nlohmann::ordered_json rope = j["rope_scaling"];
    rope["rope_theta"] = c.rope_theta;
    j.erase("rope_scaling");
    j.erase("rope_theta");
    j["rope_parameters"] = rope;
    j["sliding_window"] = nullptr;
  }
  if (c.architecture == "GraniteMoeHybridForCausalLM") {
    // As Granite 4.0 Micro's config: every layer attention, the mamba settings written though no
    // layer uses them.
    j["shared_intermediate_size"] = c.shared_intermediate_size;
    j["num_local_experts"] = c.num_experts;
    j["num_experts_per_tok"] = c.num_experts_per_tok;
    j["layer_types"] = c.layer_types;
    j["position_embedding_type"] = c.position_embedding_type.empty()
                                       ? nlohmann::ordered_json(nullptr)
                                       : nlohmann::ordered_json(c.position_embedding_type);
    j["mamba_n_heads"] = 32;
    j["mamba_d_state"] = 256;
    j["mamba_expand"] = 2;
  }
  if (c.architecture.starts_with("Granite")) {
    j["embedding_multiplier"] = c.embedding_multiplier;
    j["attention_multiplier"] = c.attention_multiplier;
    j["residual_multiplier"] = c.residual_multiplier;
    j["logits_scaling"] = c.logits_scaling;
  }
  if (c.architecture == "Glm4ForCausalLM") j["partial_rotary_factor"] = c.partial_rotary_factor;
  if (c.architecture == "Phi3ForCausalLM") {
    j["partial_rotary_factor"] = c.partial_rotary_factor;
    j["original_max_position_embeddings"] = c.original_max_position_embeddings;
    j["sliding_window"] = c.sliding_window > 0 ? nlohmann::ordered_json(c.sliding_window) : nullptr;
  }
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["bos_token_id"] = c.bos_token_id >= 0 ? nlohmann::ordered_json(c.bos_token_id) : nullptr;
  j["eos_token_id"] = token_ids_json(c);
  j["initializer_range"] = 0.02;
  if (c.architecture == "LlamaForCausalLM") j["pretraining_tp"] = 1;
  j["use_cache"] = true;
  j["torch_dtype"] = torch_dtype_name(o.dtype);
  return j;
}

nlohmann::ordered_json generation_config_json(const ModelConfig& c) {
  nlohmann::ordered_json j;
  if (c.bos_token_id >= 0) j["bos_token_id"] = c.bos_token_id;
  j["eos_token_id"] = token_ids_json(c);
  j["do_sample"] = false;
  return j;
}

void write_json(const nlohmann::ordered_json& json, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << json.dump(2) << "\n";
  out.close();
  if (!out) throw Error("cannot write " + path);
}

// Writes one tensor in chunks, each filled in parallel.
void write_tensor(const TensorSpec& t, const SynthOptions& o, CheckpointWriter& writer,
                  std::vector<uint8_t>& chunk) {
  const uint64_t key = tensor_key(o.seed, t.name);
  const ValueRule rule = value_rule(o, t.name);
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
        store(t.dtype,
              rule.scale == 0 ? rule.offset
                              : rule.offset + rule.scale * unit_value_at(key, begin + i),
              chunk.data() + i * element_bytes);
    });
    writer.append(chunk.data(), chunk.size());
  }
}

// The largest id + 1 of dir/tokenizer.json: its model's vocabulary (token -> id, or a list
// whose index is the id) and its added tokens.
int64_t tokenizer_id_limit(const std::string& dir) {
  if (!fs::is_directory(dir)) throw Error("synth: tokenizer directory " + dir + " does not exist");
  const std::string path = dir + "/tokenizer.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("synth: cannot read " + path);
  const nlohmann::json tokenizer = nlohmann::json::parse(in, nullptr, false);
  if (tokenizer.is_discarded() || !tokenizer.is_object())
    throw Error("synth: " + path + " is not a JSON object");
  int64_t limit = 0;
  const auto id = [&](const nlohmann::json& v) {  // token ids are 32-bit; others are ignored
    if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() < INT32_MAX)
      limit = std::max(limit, v.get<int64_t>() + 1);
  };
  const auto model = tokenizer.find("model");
  if (model != tokenizer.end() && model->is_object() && model->contains("vocab")) {
    const nlohmann::json& vocab = (*model)["vocab"];
    if (vocab.is_object())
      for (const auto& entry : vocab) id(entry);
    else if (vocab.is_array())
      limit = std::max(limit, static_cast<int64_t>(vocab.size()));
  }
  const auto added = tokenizer.find("added_tokens");
  if (added != tokenizer.end() && added->is_array())
    for (const nlohmann::json& token : *added)
      if (token.is_object() && token.contains("id")) id(token["id"]);
  if (limit == 0) throw Error("synth: " + path + " holds no token ids");
  return limit;
}

}  // namespace

float synthetic_value(const SynthOptions& options, std::string_view name, uint64_t index) {
  const ValueRule rule = value_rule(options, name);
  if (rule.scale == 0) return rule.offset;
  return rule.offset + rule.scale * unit_value_at(tensor_key(options.seed, name), index);
}

int64_t tokenizer_vocab_size(const std::string& tokenizer_dir, std::string_view architecture) {
  const int64_t ids = tokenizer_id_limit(tokenizer_dir);
  const bool qwen = architecture.starts_with("Qwen");
  return qwen ? (ids + 127) / 128 * 128 : ids;
}

SynthReport write_synthetic_model(const SynthOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  check_shapes(options.config);
  if (!options.tokenizer_dir.empty()) {
    // A smaller table would fail at the first prompt holding one of the higher ids.
    const int64_t ids = tokenizer_id_limit(options.tokenizer_dir);
    if (options.config.vocab_size < ids)
      throw Error("synth: vocab_size " + std::to_string(options.config.vocab_size) +
                  " is smaller than the tokenizer of " + options.tokenizer_dir + " (ids up to " +
                  std::to_string(ids - 1) + "): give at least " + std::to_string(ids));
  }
  SynthOptions o = options;
  // Granite 4's layers all attention (the synthetic models have no mamba layers), as many as the
  // options give.
  if (o.config.architecture == "GraniteMoeHybridForCausalLM")
    o.config.layer_types.assign(static_cast<size_t>(o.config.num_hidden_layers), "attention");
  std::optional<quant::SynthTokenizer> tokenizer;
  if (o.tokenizer_dir.empty()) {
    const bool qwen = o.config.architecture.starts_with("Qwen");
    tokenizer = quant::make_synthetic_tokenizer(
        o.config.vocab_size, qwen ? quant::TokenizerStyle::qwen : quant::TokenizerStyle::llama3);
    o.config.bos_token_id = tokenizer->bos_id;
    o.config.eos_token_ids = tokenizer->eos_ids;
  }
  const nlohmann::ordered_json config = config_json(o);  // also checks the dtype
  const std::vector<TensorSpec> tensors = model_tensors(o.config, o.dtype);

  quant::StagingDir staging(options.output_dir, options.replace_existing, options.notice);
  CheckpointWriter writer(staging.path(), tensors, options.max_shard_bytes);
  WriteProgress progress{0, static_cast<int64_t>(tensors.size()), 0, writer.total_data_bytes()};
  std::vector<uint8_t> chunk;
  SynthReport report;
  for (const TensorSpec& t : tensors) {
    write_tensor(t, o, writer, chunk);
    report.parameters += t.bytes() / dtype_size(t.dtype);
    ++progress.tensors_done;
    progress.bytes_done = writer.data_bytes_written();
    if (options.progress) options.progress(progress);
  }
  writer.finish();
  quant::write_config_json(config, staging.path());
  if (tokenizer) {
    quant::write_synthetic_tokenizer(*tokenizer, staging.path());
    write_json(generation_config_json(o.config), staging.path() + "/generation_config.json");
  } else if (quant::copy_tokenizer_files(options.tokenizer_dir, staging.path()) == 0) {
    throw Error("synth: " + options.tokenizer_dir + " holds no tokenizer files");
  }
  staging.commit();
  report.bytes_written = quant::directory_bytes(options.output_dir);

  report.output_dir = options.output_dir;
  report.tensors = static_cast<int64_t>(tensors.size());
  report.shards = writer.shard_count();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace dq4
