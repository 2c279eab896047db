// Model::load: config -> architecture, every linear through Linear (fused by shared input), norms
// as f32, the embedding table copied in the checkpoint's dtype. The checkpoint's files are
// unmapped when the load ends: a loaded model reads none of their pages.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "dq4/io/quant_config.h"
#include "dq4/kernels/error.h"
#include "model_impl.h"
#include "weights.h"

namespace dq4 {
namespace {

constexpr const char* kModuleTensorSuffixes[] = {".weight", ".weight_packed", ".weight_scale",
                                                 ".weight_shape", ".bias"};

// A module that config.json says has a bias must have one in the checkpoint.
void check_biases(const Checkpoint& checkpoint, const std::vector<LinearModule>& modules) {
  for (const LinearModule& m : modules)
    if (m.has_bias && checkpoint.find(m.name + ".bias") == nullptr)
      throw Error("module '" + m.name + "': config.json implies a bias, but " + checkpoint.dir() +
                  " holds no tensor '" + m.name + ".bias'");
}

// A router's selection bias. Ernie 4.5's may be absent, which is none (transformers would start it
// at zero), unless moe_use_aux_free says the model was trained to be routed with it; GLM-4 MoE's is
// always there.
std::vector<float> selection_bias(const Checkpoint& checkpoint, const std::string& name,
                                  const Architecture& a) {
  if (checkpoint.find(name) == nullptr) {
    if (!a.routing.bias_required) return {};
    const bool ernie = a.config.architecture == "Ernie4_5_MoeForCausalLM";
    throw Error("tensor '" + name + "': the router's selection bias is missing from " +
                checkpoint.dir() +
                (ernie ? " (config.json sets moe_use_aux_free)" : " (GLM-4 MoE routes with it)"));
  }
  std::vector<float> bias = model::read_vector(checkpoint, name, a.experts, true);
  for (float b : bias)
    if (!std::isfinite(b))
      throw Error("tensor '" + name + "' in " + checkpoint.tensor(name).file +
                  ": the router's selection bias must be finite");
  return bias;
}

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

std::unique_ptr<Model> Model::load(const std::string& dir, const ModelOptions& options,
                                   ThreadPool* /*pool: packing uses the global pool*/) {
  const auto start = std::chrono::steady_clock::now();
  auto impl = std::make_unique<Impl>();
  const ModelConfig config = ModelConfig::read(dir);
  const Checkpoint ckpt = Checkpoint::open_dir(dir);
  impl->arch = Architecture::read(config, ckpt);
  const ModelConfig& c = impl->arch.config;
  const QuantizationConfig quant = QuantizationConfig::read(dir);

  const TensorView& embedding = ckpt.tensor(impl->arch.embedding);
  if (embedding.dtype != Dtype::F32 && embedding.dtype != Dtype::BF16 &&
      embedding.dtype != Dtype::F16)
    throw Error("tensor '" + embedding.name + "' in " + embedding.file +
                ": embeddings must be F32, BF16 or F16, got " +
                std::string(dtype_name(embedding.dtype)));
  if (embedding.shape != std::vector<int64_t>{c.vocab_size, c.hidden_size})
    throw Error("tensor '" + embedding.name + "' in " + embedding.file + ": expected shape [" +
                std::to_string(c.vocab_size) + ", " + std::to_string(c.hidden_size) +
                "] from config.json, got " + embedding.shape_string());
  // Copied first and its mapped pages dropped, so that the copy and the table's pages are
  // resident together only for a moment (a tied head is packed from the copy).
  impl->embedding = AlignedBuffer(embedding.bytes);
  if (embedding.bytes != 0) std::memcpy(impl->embedding.data(), embedding.data, embedding.bytes);
  impl->embedding_dtype = embedding.dtype;
  ckpt.release_pages(embedding.name);
  TensorView owned_embedding = embedding;
  owned_embedding.data = impl->embedding.data();

  LinearOptions layer_options = options.linear;
  if (options.quantize_group) layer_options.quantize_dense_group = options.quantize_group;
  const int64_t total =
      static_cast<int64_t>(impl->arch.linear_groups().size()) + (impl->arch.head ? 0 : 1);
  int64_t done = 0;
  const auto packed = [&](const std::vector<LinearModule>& modules) {
    for (const LinearModule& m : modules)
      for (const char* suffix : kModuleTensorSuffixes) ckpt.release_pages(m.name + suffix);
    if (options.progress) options.progress(++done, total);
  };
  const auto load_group = [&](const std::vector<LinearModule>& modules) {
    check_biases(ckpt, modules);
    Linear linear = Linear::load(ckpt, quant, modules, layer_options);
    packed(modules);
    return linear;
  };

  // The head first, its checkpoint pages dropped once packed like every layer's, so the peak
  // RSS of loading stays near what the loaded model holds.
  if (impl->arch.head) {
    impl->head = Linear::load(ckpt, quant, std::span(&*impl->arch.head, 1), options.linear);
    packed({*impl->arch.head});
  } else {
    impl->head = Linear::from_dense_tensor(owned_embedding, options.linear);
    if (options.progress) options.progress(++done, total);
  }

  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const LayerModules names = impl->arch.layer(i);
    DecoderLayer layer;
    // Each norm the architecture has (OLMo and EXAONE 4 have no input norms, only Gemma a pre-MLP
    // one).
    const auto norm_of = [&](const std::string& name) {
      return name.empty() ? std::vector<float>() : model::read_vector(ckpt, name, c.hidden_size);
    };
    layer.input_norm = norm_of(names.input_norm);
    layer.post_attention_norm = norm_of(names.post_attention_norm);
    layer.pre_feedforward_norm = norm_of(names.pre_feedforward_norm);
    layer.post_feedforward_norm = norm_of(names.post_feedforward_norm);
    if (impl->arch.qk_norm) {
      const bool whole = impl->arch.qk_norm_whole;
      layer.q_norm = model::read_vector(ckpt, names.q_norm,
                                        whole ? c.num_attention_heads * c.head_dim : c.head_dim);
      layer.k_norm = model::read_vector(ckpt, names.k_norm,
                                        whole ? c.num_key_value_heads * c.head_dim : c.head_dim);
    }
    if (impl->arch.gemma) {
      for (auto* norm : {&layer.input_norm, &layer.post_attention_norm, &layer.q_norm,
                         &layer.k_norm, &layer.pre_feedforward_norm, &layer.post_feedforward_norm})
        model::add_one(*norm);
    }
    layer.qkv = load_group(names.attention_input);
    layer.o = load_group({names.attention_output});
    if (!names.router.empty()) {
      // The router stays as the checkpoint stores it: never quantized at load.
      LinearOptions router_options = options.linear;
      router_options.quantize_dense_group.reset();
      check_biases(ckpt, names.router);
      layer.router = Linear::load(ckpt, quant, names.router, router_options);
      packed(names.router);
      if (!names.router_bias.empty())
        layer.selection_bias = selection_bias(ckpt, names.router_bias, impl->arch);
      std::vector<std::vector<LinearModule>> inputs, outputs;
      for (const ExpertModules& e : names.experts) {
        inputs.push_back(e.input);
        outputs.push_back({e.output});
      }
      layer.experts_in = Experts::load(ckpt, quant, inputs, layer_options);
      for (const auto& modules : inputs) packed(modules);
      layer.experts_out = Experts::load(ckpt, quant, outputs, layer_options);
      for (const auto& modules : outputs) packed(modules);
    }
    if (!names.mlp_input.empty()) {
      layer.gate_up = load_group(names.mlp_input);
      layer.down = load_group({names.mlp_output});
    }
    impl->layers.push_back(std::move(layer));
  }
  impl->final_norm = model::read_vector(ckpt, impl->arch.final_norm, c.hidden_size);
  if (impl->arch.gemma) model::add_one(impl->final_norm);

  impl->inv_freq = impl->arch.rope_inv_freq();
  if (impl->arch.local_rope_theta > 0) impl->inv_freq_local = impl->arch.local_rope_inv_freq();
  if (impl->arch.rope == RopeVariant::longrope)
    impl->inv_freq_long = impl->arch.rope_inv_freq(true);
  impl->eos_ids = c.eos_token_ids;
  for (int32_t id : read_generation_eos_ids(dir))
    if (std::find(impl->eos_ids.begin(), impl->eos_ids.end(), id) == impl->eos_ids.end())
      impl->eos_ids.push_back(id);

  LoadReport& r = impl->report;
  r.packed_bytes = impl->head.bytes();
  r.other_bytes = (impl->final_norm.size() + impl->inv_freq.size() + impl->inv_freq_local.size() +
                   impl->inv_freq_long.size()) *
                  sizeof(float);
  for (const DecoderLayer& l : impl->layers) {
    r.packed_bytes += l.qkv.bytes() + l.o.bytes() + l.gate_up.bytes() + l.down.bytes() +
                      l.router.bytes() + l.experts_in.bytes() + l.experts_out.bytes();
    r.other_bytes +=
        (l.input_norm.size() + l.post_attention_norm.size() + l.q_norm.size() + l.k_norm.size() +
         l.pre_feedforward_norm.size() + l.post_feedforward_norm.size() + l.selection_bias.size()) *
        sizeof(float);
  }
  r.embedding_bytes = embedding.bytes;
  r.unused_tensors = unused_tensors(ckpt);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::unique_ptr<Model>(new Model(std::move(impl)));
}

const ModelConfig& Model::config() const { return impl_->arch.config; }
const LoadReport& Model::load_report() const { return impl_->report; }
int64_t Model::vocab_size() const { return impl_->arch.config.vocab_size; }
int64_t Model::max_context() const { return impl_->arch.context_length; }
int64_t Model::rope_switch_length() const {
  return impl_->inv_freq_long.empty() ? 0 : impl_->arch.longrope_original_context;
}
const std::vector<int32_t>& Model::eos_ids() const { return impl_->eos_ids; }
const Linear& Model::head() const { return impl_->head; }

KvCacheShape Model::kv_shape(int64_t blocks, int64_t block_size, attention::KvType type) const {
  const ModelConfig& c = config();
  return {c.num_hidden_layers, c.num_key_value_heads, c.head_dim, block_size, blocks, type};
}

std::vector<std::string> Model::describe() const {
  std::vector<std::string> lines;
  if (!impl_->layers.empty()) {
    const DecoderLayer& l = impl_->layers.front();
    lines.push_back("attention input: " + l.qkv.description());
    lines.push_back("attention output: " + l.o.description());
    // The first sparse layer's experts (layer 0 may be kept dense: mlp_only_layers).
    for (const DecoderLayer& sparse : impl_->layers) {
      if (!sparse.sparse()) continue;
      lines.push_back("router: " + sparse.router.description());
      lines.push_back("experts input: " + sparse.experts_in.description());
      lines.push_back("experts output: " + sparse.experts_out.description());
      break;
    }
    if (l.has_mlp()) {
      lines.push_back(std::string(l.sparse() ? "shared expert input: " : "mlp input: ") +
                      l.gate_up.description());
      lines.push_back(std::string(l.sparse() ? "shared expert output: " : "mlp output: ") +
                      l.down.description());
    }
  }
  lines.push_back(std::string(impl_->arch.head ? "head: " : "head (tied): ") +
                  impl_->head.description());
  return lines;
}

}  // namespace dq4
