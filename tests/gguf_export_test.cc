// dq4 export-gguf: the GGUF file read back by an independent reader (tests/gguf_reader.cc) holds
// llama.cpp's metadata and names, and exactly the checkpoint's values: Q4_0 blocks dequantize to
// the compressed-tensors int4 values times their scales, with llama's q/k rows permuted.

#include "dq4/convert/gguf_export.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "dq4/convert/quantize.h"
#include "dq4/convert/synth.h"
#include "dq4/io/checkpoint.h"
#include "dq4/io/gguf_writer.h"
#include "dq4/io/model_config.h"
#include "dq4/kernels/half.h"
#include "dq4/kernels/int4_codec.h"
#include "dq4/model/architecture.h"
#include "dq4/tokenizer/tokenizer.h"
#include "expect_error.h"
#include "fixtures.h"
#include "gguf_reader.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

namespace fs = std::filesystem;

float element(const TensorView& t, int64_t i) {
  if (t.dtype == Dtype::F32) return t.as<float>()[i];
  if (t.dtype == Dtype::BF16) return bf16_to_f32(t.as<uint16_t>(Dtype::BF16)[i]);
  return f16_to_f32(t.as<uint16_t>(Dtype::F16)[i]);
}

// A synthetic preset with in_features that are multiples of 32 (Q4_0 blocks).
std::string synth(const ScratchDir& scratch, const std::string& preset, Dtype dtype) {
  SynthOptions o = synth_preset(preset);
  o.config.intermediate_size = 128;
  o.dtype = dtype;
  o.seed = 11;
  o.output_dir = scratch.file(preset + "-" + std::string(dtype_name(dtype)));
  write_synthetic_model(o);
  return o.output_dir;
}

std::string quantize(const std::string& in, const std::string& out, int64_t group_size, bool w4a8,
                     WeightFormat format) {
  QuantizeOptions o;
  o.input_dir = in;
  o.modules = Architecture::read(in).linear_modules();
  o.output_dir = out;
  o.group_size = group_size;
  o.quantize_activations = w4a8;
  o.format = format;
  quantize_checkpoint(o);
  return out;
}

GgufFile export_to(const std::string& dir, const std::string& file) {
  GgufExportOptions o;
  o.model_dir = dir;
  o.output = file;
  export_gguf(o);
  return GgufFile::read(file);
}

// HF row of GGUF row r for llama's q/k: interleaved pairs from rotate-half halves.
int64_t hf_row(int64_t r, int64_t rows, int64_t heads) {
  const int64_t d = rows / heads, within = r % d;
  return r / d * d + (within % 2) * (d / 2) + within / 2;
}

// The checkpoint's value of a linear weight (dequantized when int4), element [row, col].
class CheckpointWeights {
 public:
  explicit CheckpointWeights(const Checkpoint& c) : c_(c) {}
  float at(const std::string& module, int64_t row, int64_t col) const {
    if (const TensorView* w = c_.find(module + ".weight"); w != nullptr && w->dtype != Dtype::I8)
      return element(*w, row * w->shape[1] + col);
    const TensorView& scale = c_.tensor(module + ".weight_scale");
    const int64_t groups = scale.shape[1];
    int8_t q;
    int64_t k;
    if (const TensorView* w = c_.find(module + ".weight")) {
      k = w->shape[1];
      q = w->as<int8_t>()[row * k + col];
    } else {
      const TensorView& packed = c_.tensor(module + ".weight_packed");
      k = c_.tensor(module + ".weight_shape").as<int64_t>()[1];
      std::vector<int8_t> values(static_cast<size_t>(k));
      unpack_int4_rows(packed.as<int32_t>().data() + row * packed.shape[1], 1, k, values.data());
      q = values[col];
    }
    return static_cast<float>(q) * element(scale, row * groups + col / (k / groups));
  }

 private:
  const Checkpoint& c_;
};

void expect_metadata(const GgufFile& g, const ModelConfig& c, const std::string& arch) {
  EXPECT_EQ(g.version, 3u);
  EXPECT_EQ(g.get<std::string>("general.architecture"), arch);
  EXPECT_EQ(g.get<uint32_t>(arch + ".block_count"), c.num_hidden_layers);
  EXPECT_EQ(g.get<uint32_t>(arch + ".embedding_length"), c.hidden_size);
  EXPECT_EQ(g.get<uint32_t>(arch + ".feed_forward_length"), c.intermediate_size);
  EXPECT_EQ(g.get<uint32_t>(arch + ".context_length"), c.max_position_embeddings);
  EXPECT_EQ(g.get<uint32_t>(arch + ".attention.head_count"), c.num_attention_heads);
  EXPECT_EQ(g.get<uint32_t>(arch + ".attention.head_count_kv"), c.num_key_value_heads);
  EXPECT_EQ(g.get<uint32_t>(arch + ".attention.key_length"), c.head_dim);
  EXPECT_EQ(g.get<uint32_t>(arch + ".rope.dimension_count"), c.head_dim);
  EXPECT_EQ(g.get<uint32_t>(arch + ".vocab_size"), c.vocab_size);
  EXPECT_EQ(g.get<float>(arch + ".attention.layer_norm_rms_epsilon"),
            static_cast<float>(c.rms_norm_eps));
  EXPECT_EQ(g.get<float>(arch + ".rope.freq_base"), static_cast<float>(c.rope_theta));
}

// The vocabulary is dq4::Tokenizer's, id for id, with the special ids and the chat template.
void expect_vocab(const GgufFile& g, const std::string& dir, const ModelConfig& c) {
  const Tokenizer t = Tokenizer::from_directory(dir);
  const auto& tokens = g.get<std::vector<std::string>>("tokenizer.ggml.tokens");
  const auto& types = g.get<std::vector<int32_t>>("tokenizer.ggml.token_type");
  ASSERT_EQ(static_cast<int64_t>(tokens.size()), c.vocab_size);
  ASSERT_EQ(types.size(), tokens.size());
  for (int64_t id = 0; id < c.vocab_size; ++id) {
    EXPECT_EQ(tokens[id], t.id_to_token(static_cast<TokenId>(id)).value_or("?")) << id;
    EXPECT_EQ(types[id], t.is_special(static_cast<TokenId>(id)) ? 3 : 1) << id;
  }
  EXPECT_EQ(g.get<uint32_t>("tokenizer.ggml.eos_token_id"), static_cast<uint32_t>(*t.eos_id()));
  const nlohmann::json config =
      nlohmann::json::parse(std::ifstream(dir + "/tokenizer_config.json"));
  EXPECT_EQ(g.get<std::string>("tokenizer.chat_template"), config["chat_template"]);
  EXPECT_EQ(g.get<std::string>("tokenizer.ggml.model"), "gpt2");
  const nlohmann::json tok = nlohmann::json::parse(std::ifstream(dir + "/tokenizer.json"));
  const auto& merges = g.get<std::vector<std::string>>("tokenizer.ggml.merges");
  ASSERT_EQ(merges.size(), tok["model"]["merges"].size());
  EXPECT_EQ(merges[0], tok["model"]["merges"][0][0].get<std::string>() + " " +
                           tok["model"]["merges"][0][1].get<std::string>());
}

TEST(GgufExport, W4A8G32LlamaIsQ4_0WithTheSameValuesAndPermutedQK) {
  ScratchDir scratch;
  const std::string in = synth(scratch, "tiny-llama3", Dtype::BF16);
  for (const WeightFormat format : {WeightFormat::int_quantized, WeightFormat::pack_quantized}) {
    SCOPED_TRACE(std::string(weight_format_name(format)));
    const std::string q =
        quantize(in, scratch.file("q" + std::string(weight_format_name(format))), 32, true, format);
    const GgufFile g = export_to(q, q + ".gguf");
    const ModelConfig c = ModelConfig::read(q);
    expect_metadata(g, c, "llama");
    expect_vocab(g, q, c);
    EXPECT_EQ(g.get<uint32_t>("general.file_type"), 2u);  // MOSTLY_Q4_0
    EXPECT_EQ(g.get<uint32_t>("tokenizer.ggml.bos_token_id"),
              static_cast<uint32_t>(c.bos_token_id));
    EXPECT_EQ(g.get<std::string>("tokenizer.ggml.pre"), "llama-bpe");
    EXPECT_TRUE(g.get<bool>("tokenizer.ggml.add_bos_token"));

    const Checkpoint ckpt = Checkpoint::open_dir(q);
    const CheckpointWeights weights(ckpt);
    // 2 layers x (2 norms + 7 linears) + embedding, rope_freqs, output norm, output.
    EXPECT_EQ(g.tensors.size(), 2u * 9 + 4);
    for (const auto& [hf, gguf, heads] : std::vector<std::tuple<std::string, std::string, int64_t>>{
             {"model.layers.1.self_attn.q_proj", "blk.1.attn_q.weight", c.num_attention_heads},
             {"model.layers.1.self_attn.k_proj", "blk.1.attn_k.weight", c.num_key_value_heads},
             {"model.layers.0.self_attn.v_proj", "blk.0.attn_v.weight", 0},
             {"model.layers.0.mlp.down_proj", "blk.0.ffn_down.weight", 0}}) {
      SCOPED_TRACE(gguf);
      const GgufTensorInfo* t = g.find(gguf);
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->type, 2u);  // Q4_0
      const int64_t k = t->ne[0], n = t->ne[1];
      const std::vector<float> v = g.values(gguf);
      int64_t mismatches = 0;
      for (int64_t r = 0; r < n; ++r)
        for (int64_t col = 0; col < k; ++col)
          mismatches += v[r * k + col] != weights.at(hf, heads ? hf_row(r, n, heads) : r, col);
      EXPECT_EQ(mismatches, 0);
    }
    // The head stays BF16 (lm_head is not quantized), norms F32 with the same values.
    EXPECT_EQ(g.find("output.weight")->type, 30u);
    EXPECT_EQ(g.find("token_embd.weight")->type, 30u);
    EXPECT_EQ(g.find("blk.0.ffn_norm.weight")->type, 0u);
    const std::vector<float> norm = g.values("blk.0.ffn_norm.weight");
    const TensorView& hf_norm = ckpt.tensor("model.layers.0.post_attention_layernorm.weight");
    for (size_t i = 0; i < norm.size(); ++i) EXPECT_EQ(norm[i], element(hf_norm, i));
    const std::vector<float> head = g.values("output.weight");
    for (size_t i = 0; i < head.size(); i += 97)
      EXPECT_EQ(head[i], weights.at("lm_head", i / 96, i % 96));

    // llama3 rope factors: 1 for short wavelengths, the factor for long ones, smooth between
    // (head_dim 24, theta 1e4, original context 32, factor 4: wavelength 2 pi 1e4^(i/12)).
    const std::vector<float> rope = g.values("rope_freqs.weight");
    ASSERT_EQ(rope.size(), 12u);
    EXPECT_EQ(rope[0], 1.0f);
    EXPECT_EQ(rope[11], 4.0f);
    const double wavelen = 2 * M_PI * std::pow(1e4, 1.0 / 12);
    const double smooth = (32 / wavelen - 1) / 3;
    EXPECT_NEAR(rope[1], 1 / ((1 - smooth) / 4 + smooth), 1e-5);
    EXPECT_GT(rope[2], rope[1]);
    EXPECT_LT(rope[2], 4.0f);
  }
}

TEST(GgufExport, W4A16QwenKeepsItsLayoutBiasesAndQKNorms) {
  ScratchDir scratch;
  for (const std::string preset : {"tiny-qwen2", "tiny-qwen3"}) {
    SCOPED_TRACE(preset);
    const std::string q = quantize(synth(scratch, preset, Dtype::F16), scratch.file(preset + "-q"),
                                   32, false, WeightFormat::pack_quantized);
    const GgufFile g = export_to(q, scratch.file(preset + ".gguf"));
    const ModelConfig c = ModelConfig::read(q);
    const std::string arch = preset == "tiny-qwen2" ? "qwen2" : "qwen3";
    expect_metadata(g, c, arch);
    expect_vocab(g, q, c);
    EXPECT_EQ(g.get<std::string>("tokenizer.ggml.pre"), "qwen2");
    EXPECT_FALSE(g.get<bool>("tokenizer.ggml.add_bos_token"));
    EXPECT_EQ(g.metadata.count("tokenizer.ggml.bos_token_id"), 0u);
    EXPECT_EQ(g.metadata.count("rope_freqs.weight"), 0u);

    const Checkpoint ckpt = Checkpoint::open_dir(q);
    const CheckpointWeights weights(ckpt);
    const std::vector<float> qw = g.values("blk.1.attn_q.weight");  // not permuted
    for (size_t i = 0; i < qw.size(); i += 7)
      EXPECT_EQ(qw[i], weights.at("model.layers.1.self_attn.q_proj", i / 96, i % 96)) << i;
    EXPECT_EQ(g.find("output.weight") != nullptr, !c.tie_word_embeddings);
    if (arch == "qwen2") {
      const std::vector<float> bias = g.values("blk.0.attn_k.bias");
      const TensorView& hf = ckpt.tensor("model.layers.0.self_attn.k_proj.bias");
      ASSERT_EQ(bias.size(), static_cast<size_t>(hf.numel()));
      for (size_t i = 0; i < bias.size(); ++i) EXPECT_EQ(bias[i], element(hf, i));
      EXPECT_EQ(g.find("blk.0.attn_output.bias"), nullptr);
    } else {
      const std::vector<float> norm = g.values("blk.1.attn_k_norm.weight");
      const TensorView& hf = ckpt.tensor("model.layers.1.self_attn.k_norm.weight");
      ASSERT_EQ(norm.size(), 24u);
      for (size_t i = 0; i < norm.size(); ++i) EXPECT_EQ(norm[i], element(hf, i));
    }
  }
}

TEST(GgufExport, UnquantizedModelsBecomeF32) {
  ScratchDir scratch;
  const std::string in = synth(scratch, "tiny-linear-rope", Dtype::BF16);
  const GgufFile g = export_to(in, scratch.file("f32.gguf"));
  EXPECT_EQ(g.get<uint32_t>("general.file_type"), 0u);
  EXPECT_EQ(g.get<std::string>("llama.rope.scaling.type"), "linear");
  EXPECT_EQ(g.get<float>("llama.rope.scaling.factor"), 2.0f);
  EXPECT_EQ(g.find("rope_freqs.weight"), nullptr);
  for (const GgufTensorInfo& t : g.tensors) EXPECT_EQ(t.type, 0u) << t.name;
  const Checkpoint ckpt = Checkpoint::open_dir(in);
  const CheckpointWeights weights(ckpt);
  const std::vector<float> k = g.values("blk.0.attn_k.weight");
  const int64_t rows = 2 * 24;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < 96; ++col)
      ASSERT_EQ(k[r * 96 + col],
                weights.at("model.layers.0.self_attn.k_proj", hf_row(r, rows, 2), col));
  const std::vector<float> embed = g.values("token_embd.weight");
  const TensorView& hf = ckpt.tensor("model.embed_tokens.weight");
  for (size_t i = 0; i < embed.size(); i += 13) EXPECT_EQ(embed[i], element(hf, i));
}

// yarn: llama.cpp's keys, and the settings it runs only at their defaults refused by name.
TEST(GgufExport, YarnKeysAndWhatLlamaCppFixes) {
  ScratchDir scratch;
  const std::string in = synth(scratch, "tiny-qwen2-yarn", Dtype::F32);
  const GgufFile g = export_to(in, scratch.file("yarn.gguf"));
  EXPECT_EQ(g.get<std::string>("qwen2.rope.scaling.type"), "yarn");
  EXPECT_EQ(g.get<float>("qwen2.rope.scaling.factor"), 4.0f);
  EXPECT_EQ(g.get<uint32_t>("qwen2.rope.scaling.original_context_length"), 1024u);
  EXPECT_EQ(g.get<uint32_t>("qwen2.context_length"), 1024u);  // max_position_embeddings
  const std::string config = in + "/config.json";
  const nlohmann::json original = nlohmann::json::parse(read_file(config));
  for (const auto& [key, value] : {std::pair{"beta_fast", nlohmann::json(16.0)},
                                   {"beta_slow", nlohmann::json(2.0)},
                                   {"truncate", nlohmann::json(false)},
                                   {"attention_factor", nlohmann::json(1.0)}}) {
    nlohmann::json c = original;
    c["rope_scaling"][key] = value;
    write_file(config, c.dump());
    GgufExportOptions o;
    o.model_dir = in;
    o.output = scratch.file(std::string(key) + ".gguf");
    expect_error([&] { export_gguf(o); }, {std::string("rope_scaling.") + key});
  }
}

// Granite: llama.cpp's granite architecture with its four scales from config.json.
TEST(GgufExport, GraniteScales) {
  ScratchDir scratch;
  const GgufFile g =
      export_to(synth(scratch, "tiny-granite", Dtype::F32), scratch.file("granite.gguf"));
  EXPECT_EQ(g.get<std::string>("general.architecture"), "granite");
  EXPECT_EQ(g.get<float>("granite.embedding_scale"), 12.0f);
  EXPECT_EQ(g.get<float>("granite.attention.scale"), 0.015625f);
  EXPECT_EQ(g.get<float>("granite.residual_scale"), 0.22f);
  EXPECT_EQ(g.get<float>("granite.logit_scale"), 8.0f);
}

// Granite 4 without mamba layers or experts: llama.cpp's granite, the fused shared_mlp's halves as
// ffn_gate and ffn_up, and (NoPE) the key that turns its rotary embeddings off.
TEST(GgufExport, Granite4SplitsTheSharedMlpAndSwitchesRope) {
  ScratchDir scratch;
  const std::string in = synth(scratch, "tiny-granite4-nope", Dtype::F32);
  const GgufFile g = export_to(in, scratch.file("granite4.gguf"));
  EXPECT_EQ(g.get<std::string>("general.architecture"), "granite");
  EXPECT_EQ(g.get<bool>("granite.rope.scaling.finetuned"), false);
  EXPECT_EQ(g.get<uint32_t>("granite.feed_forward_length"), 200u);
  const Checkpoint ckpt = Checkpoint::open_dir(in);
  const TensorView& fused = ckpt.tensor("model.layers.1.shared_mlp.input_linear.weight");
  const auto all = fused.as<float>();
  const auto half = static_cast<std::ptrdiff_t>(all.size() / 2);
  EXPECT_EQ(g.values("blk.1.ffn_gate.weight"), std::vector<float>(all.begin(), all.begin() + half));
  EXPECT_EQ(g.values("blk.1.ffn_up.weight"), std::vector<float>(all.begin() + half, all.end()));
  EXPECT_EQ(g.find("blk.1.ffn_up.weight")->ne, (std::vector<int64_t>{96, 200}));
  // With rotary embeddings, llama.cpp's default (on) is left as it is.
  const GgufFile rotary =
      export_to(synth(scratch, "tiny-granite4", Dtype::F32), scratch.file("granite4-rope.gguf"));
  EXPECT_EQ(rotary.metadata.count("granite.rope.scaling.finetuned"), 0u);
  // With experts it is llama.cpp's granitemoe, which reads no rope switch: NoPE is refused.
  SynthOptions moe = synth_preset("tiny-granite4-moe");
  moe.config.position_embedding_type.clear();
  moe.dtype = Dtype::F32;
  moe.output_dir = scratch.file("granite4-moe-nope");
  write_synthetic_model(moe);
  GgufExportOptions o;
  o.model_dir = moe.output_dir;
  o.output = scratch.file("granite4-moe-nope.gguf");
  expect_error([&] { export_gguf(o); }, {"position_embedding_type", "granitemoe rotates"});
}

// Ernie 4.5 MoE: llama.cpp's ernie4_5-moe with its leading dense layer, the shared experts' width,
// the stacked experts and the router's selection bias as exp_probs_b; a layer pattern it cannot run
// refused.
TEST(GgufExport, Ernie45MoeLayersSharedExpertsAndSelectionBias) {
  ScratchDir scratch;
  const std::string in = synth(scratch, "tiny-ernie4_5-moe", Dtype::F32);
  const GgufFile g = export_to(in, scratch.file("ernie.gguf"));
  const std::string arch = "ernie4_5-moe";
  EXPECT_EQ(g.get<std::string>("general.architecture"), arch);
  EXPECT_EQ(g.get<uint32_t>(arch + ".leading_dense_block_count"), 1u);
  EXPECT_EQ(g.get<uint32_t>(arch + ".interleave_moe_layer_step"), 1u);
  EXPECT_EQ(g.get<uint32_t>(arch + ".expert_count"), 8u);
  EXPECT_EQ(g.get<uint32_t>(arch + ".expert_used_count"), 2u);
  EXPECT_EQ(g.get<uint32_t>(arch + ".expert_feed_forward_length"), 64u);
  EXPECT_EQ(g.get<uint32_t>(arch + ".expert_shared_feed_forward_length"), 128u);
  EXPECT_NE(g.find("blk.0.ffn_up.weight"), nullptr);
  EXPECT_EQ(g.find("blk.0.ffn_gate_inp.weight"), nullptr);
  ASSERT_NE(g.find("blk.2.ffn_down_exps.weight"), nullptr);
  EXPECT_EQ(g.find("blk.2.ffn_down_exps.weight")->ne, (std::vector<int64_t>{64, 96, 8}));
  EXPECT_EQ(g.find("blk.1.ffn_up_shexp.weight")->ne, (std::vector<int64_t>{96, 128}));
  const Checkpoint ckpt = Checkpoint::open_dir(in);
  const auto bias = ckpt.tensor("model.layers.2.mlp.moe_statics.e_score_correction_bias");
  EXPECT_EQ(g.values("blk.2.exp_probs_b.bias"),
            std::vector<float>(bias.as<float>().begin(), bias.as<float>().end()));

  GgufExportOptions o;
  o.model_dir = in;
  o.output = scratch.file("refused.gguf");
  nlohmann::json c = nlohmann::json::parse(read_file(in + "/config.json"));
  c["moe_layer_end_index"] = 1;
  write_file(in + "/config.json", c.dump());
  expect_error([&] { export_gguf(o); }, {"layer 2 is dense", "ernie4_5-moe"});
}

// GLM-4 MoE: llama.cpp's glm4moe with sigmoid routing, its groups and scale, the MLP's input norm
// as attn_post_norm, half of each head rotated.
TEST(GgufExport, Glm4MoeRoutingKeysAndNorms) {
  ScratchDir scratch;
  const std::string in = synth(scratch, "tiny-glm4-moe", Dtype::F32);
  const GgufFile g = export_to(in, scratch.file("glm.gguf"));
  const std::string arch = "glm4moe";
  EXPECT_EQ(g.get<std::string>("general.architecture"), arch);
  EXPECT_EQ(g.get<uint32_t>(arch + ".leading_dense_block_count"), 1u);
  EXPECT_EQ(g.get<uint32_t>(arch + ".expert_shared_count"), 1u);
  EXPECT_EQ(g.get<uint32_t>(arch + ".expert_gating_func"), 2u);
  EXPECT_EQ(g.get<float>(arch + ".expert_weights_scale"), 2.5f);
  EXPECT_TRUE(g.get<bool>(arch + ".expert_weights_norm"));
  EXPECT_EQ(g.get<uint32_t>(arch + ".expert_group_count"), 2u);
  EXPECT_EQ(g.get<uint32_t>(arch + ".expert_group_used_count"), 1u);
  EXPECT_EQ(g.get<uint32_t>(arch + ".rope.dimension_count"), 12u);
  EXPECT_NE(g.find("blk.1.post_attention_norm.weight"), nullptr);
  EXPECT_EQ(g.find("blk.1.ffn_norm.weight"), nullptr);
  EXPECT_NE(g.find("blk.1.attn_q_norm.weight"), nullptr);
  EXPECT_NE(g.find("blk.2.exp_probs_b.bias"), nullptr);
  EXPECT_NE(g.find("blk.1.attn_q.bias"), nullptr);
  EXPECT_EQ(g.find("blk.1.attn_output.bias"), nullptr);
}

// SmolLM3: llama.cpp's smollm3 fixes the NoPE layers at every fourth.
TEST(GgufExport, SmolLM3NoPELayers) {
  ScratchDir scratch;
  const std::string in = synth(scratch, "tiny-smollm3", Dtype::F32);
  EXPECT_EQ(export_to(in, scratch.file("smollm3.gguf")).get<std::string>("general.architecture"),
            "smollm3");
  nlohmann::json c = nlohmann::json::parse(read_file(in + "/config.json"));
  c["no_rope_layers"] = {1, 0, 1, 1};
  write_file(in + "/config.json", c.dump());
  GgufExportOptions o;
  o.model_dir = in;
  o.output = scratch.file("refused.gguf");
  expect_error([&] { export_gguf(o); }, {"no_rope_layers", "layer 1 does not rotate"});
}

// OLMo 3: llama.cpp's olmo2 with a window and its period; what olmo2 cannot express refused.
TEST(GgufExport, Olmo3WindowsAndTheirPeriod) {
  ScratchDir scratch;
  const std::string in = synth(scratch, "tiny-olmo3", Dtype::F32);
  const GgufFile g = export_to(in, scratch.file("olmo3.gguf"));
  EXPECT_EQ(g.get<std::string>("general.architecture"), "olmo2");
  EXPECT_EQ(g.get<uint32_t>("olmo2.attention.sliding_window"), 8u);
  EXPECT_EQ(g.get<uint32_t>("olmo2.attention.sliding_window_pattern"), 4u);
  EXPECT_EQ(g.get<std::string>("olmo2.rope.scaling.type"), "yarn");
  const nlohmann::json original = nlohmann::json::parse(read_file(in + "/config.json"));
  nlohmann::json c = original;
  c["layer_types"] = {"sliding_attention", "sliding_attention", "sliding_attention",
                      "sliding_attention"};
  write_file(in + "/config.json", c.dump());
  EXPECT_EQ(export_to(in, scratch.file("all.gguf"))
                .get<uint32_t>("olmo2.attention.sliding_window_pattern"),
            0u);  // llama.cpp: every layer
  c["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention", "full_attention"};
  write_file(in + "/config.json", c.dump());
  EXPECT_EQ(export_to(in, scratch.file("two.gguf"))
                .get<uint32_t>("olmo2.attention.sliding_window_pattern"),
            2u);
  GgufExportOptions o;
  o.model_dir = in;
  o.output = scratch.file("refused.gguf");
  c["layer_types"] = {"sliding_attention", "full_attention", "full_attention", "sliding_attention"};
  write_file(in + "/config.json", c.dump());
  expect_error([&] { export_gguf(o); }, {"layer_types", "layer 2", "first 2 layers"});
  c = original;
  c.erase("rope_theta");
  c.erase("rope_scaling");
  c["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}},
                          {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e5}}}};
  write_file(in + "/config.json", c.dump());
  expect_error([&] { export_gguf(o); }, {"rope_parameters.sliding_attention.rope_theta"});
}

// EXAONE 4: llama.cpp's exaone4, which runs windows (and NoPE on the global layers) for 64-layer
// models alone.
TEST(GgufExport, Exaone4WindowsOnlyWithSixtyFourLayers) {
  ScratchDir scratch;
  const std::string in = synth(scratch, "tiny-exaone4", Dtype::F32);
  const GgufFile g = export_to(in, scratch.file("exaone4.gguf"));
  EXPECT_EQ(g.get<std::string>("general.architecture"), "exaone4");
  EXPECT_EQ(g.get<uint32_t>("exaone4.attention.sliding_window"), 8u);
  EXPECT_EQ(g.get<uint32_t>("exaone4.attention.sliding_window_pattern"), 4u);
  EXPECT_NE(g.find("rope_freqs.weight"), nullptr);  // llama3 scaling
  nlohmann::json c = nlohmann::json::parse(read_file(in + "/config.json"));
  c["sliding_window"] = nullptr;
  c["layer_types"] = std::vector<std::string>(64, "full_attention");
  write_file(in + "/config.json", c.dump());
  GgufExportOptions o;
  o.model_dir = in;
  o.output = scratch.file("refused.gguf");
  expect_error([&] { export_gguf(o); }, {"sliding_window", "64 layers and none"});
}

// Ministral 3: llama.cpp's mistral3, with the query scaling and the yarn settings it reads as keys.
TEST(GgufExport, Ministral3QueryScaleAndYarnKeys) {
  ScratchDir scratch;
  const std::string in = synth(scratch, "tiny-ministral3", Dtype::F32);
  const GgufFile g = export_to(in, scratch.file("ministral3.gguf"));
  EXPECT_EQ(g.get<std::string>("general.architecture"), "mistral3");
  EXPECT_EQ(g.get<float>("mistral3.attention.temperature_scale"), 0.1f);
  EXPECT_EQ(g.get<float>("mistral3.rope.scaling.yarn_log_multiplier"), 1.0f);
  EXPECT_EQ(g.get<float>("mistral3.rope.scaling.yarn_beta_fast"), 32.0f);
  EXPECT_EQ(g.get<float>("mistral3.rope.scaling.yarn_beta_slow"), 1.0f);
  EXPECT_EQ(g.get<uint32_t>("mistral3.rope.scaling.original_context_length"), 16u);
  nlohmann::json c = nlohmann::json::parse(read_file(in + "/config.json"));
  c["rope_parameters"]["mscale"] = 2.0;  // llama.cpp takes mscale as 1
  write_file(in + "/config.json", c.dump());
  GgufExportOptions o;
  o.model_dir = in;
  o.output = scratch.file("refused.gguf");
  expect_error([&] { export_gguf(o); }, {"rope_scaling.mscale"});
}

// stories260K: SentencePiece-style BPE with byte fallback becomes llama.cpp's "llama" vocabulary.
TEST(GgufExport, SentencePieceVocabulary) {
  ScratchDir scratch;
  const std::string dir = fixtures_dir() + "/stories260K-hf";
  const GgufFile g = export_to(dir, scratch.file("stories.gguf"));
  EXPECT_EQ(g.get<std::string>("tokenizer.ggml.model"), "llama");
  const auto& tokens = g.get<std::vector<std::string>>("tokenizer.ggml.tokens");
  const auto& types = g.get<std::vector<int32_t>>("tokenizer.ggml.token_type");
  const auto& scores = g.get<std::vector<float>>("tokenizer.ggml.scores");
  ASSERT_EQ(tokens.size(), 512u);
  EXPECT_EQ(scores.size(), 512u);
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(types[1], 3);  // control
  EXPECT_EQ(types[0], 3);  // <unk> is special in this tokenizer.json
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(types[3], 6);  // byte
  EXPECT_EQ(g.get<uint32_t>("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(g.get<uint32_t>("tokenizer.ggml.unknown_token_id"), 0u);
  EXPECT_TRUE(g.get<bool>("tokenizer.ggml.add_bos_token"));
  EXPECT_EQ(g.get<uint32_t>("general.file_type"), 0u);
}

// A template kept only in a multimodal processor's chat_template.json goes in too.
TEST(GgufExport, ProcessorChatTemplate) {
  ScratchDir scratch;
  const std::string in = synth(scratch, "tiny-granite", Dtype::F32);
  nlohmann::json config = nlohmann::json::parse(read_file(in + "/tokenizer_config.json"));
  const nlohmann::json chat_template = config["chat_template"];
  config.erase("chat_template");
  write_file(in + "/tokenizer_config.json", config.dump());
  EXPECT_FALSE(
      export_to(in, scratch.file("none.gguf")).metadata.contains("tokenizer.chat_template"));
  write_file(in + "/chat_template.json", nlohmann::json{{"chat_template", chat_template}}.dump());
  EXPECT_EQ(
      export_to(in, scratch.file("processor.gguf")).get<std::string>("tokenizer.chat_template"),
      chat_template);
}

TEST(GgufExport, RefusalsNameTheFault) {
  ScratchDir scratch;
  const std::string bf16 = synth(scratch, "tiny", Dtype::BF16);
  const auto fails = [&](const std::string& dir, std::initializer_list<std::string> fragments) {
    GgufExportOptions o;
    o.model_dir = dir;
    o.output = scratch.file("refused.gguf");
    expect_error([&] { export_gguf(o); }, fragments);
    EXPECT_FALSE(fs::exists(o.output));
  };
  fails(quantize(bf16, scratch.file("ch"), 0, true, WeightFormat::int_quantized),
        {"model.layers.0.self_attn.q_proj", "channelwise", "groups of 32"});
  fails(quantize(bf16, scratch.file("g64"), 64, true, WeightFormat::int_quantized),
        {"group size 64"});
  fails(fixtures_dir() + "/stories260K-hf-w4a16-ct", {"channelwise"});
  // tiny's own down_proj has K = 200: not whole Q4_0 blocks.
  SynthOptions o = synth_preset("tiny");
  o.output_dir = scratch.file("k200");
  write_synthetic_model(o);
  fails(quantize(o.output_dir, scratch.file("k200-q"), 32, true, WeightFormat::int_quantized),
        {"mlp.down_proj", "in_features 200", "multiple of 32"});
  // F32 scales of an F32 model are not f16 values.
  fails(quantize(synth(scratch, "tiny", Dtype::F32), scratch.file("f32q"), 32, true,
                 WeightFormat::int_quantized),
        {"weight_scale", "not exactly representable in f16"});
  // A config.json whose shapes the tensors do not have.
  const std::string config = bf16 + "/config.json";
  const std::string original = read_file(config);
  nlohmann::json changed = nlohmann::json::parse(original);
  changed["head_dim"] = 12;
  write_file(config, changed.dump());
  fails(bf16, {"model.layers.0.self_attn.q_proj", "96x96", "config.json implies 48x96"});
  changed = nlohmann::json::parse(original);
  changed["vocab_size"] = 400;
  write_file(config, changed.dump());
  fails(bf16, {"model.embed_tokens.weight", "[400, 96]"});
  changed = nlohmann::json::parse(original);
  changed["max_position_embeddings"] = int64_t{1} << 40;
  write_file(config, changed.dump());
  fails(bf16, {"llama.context_length = 1099511627776", "uint32"});
  changed = nlohmann::json::parse(original);
  changed["mlp_bias"] = true;
  write_file(config, changed.dump());
  fails(bf16, {"model.layers.0.mlp.gate_proj", "implies a bias"});
  write_file(config, original);
  fs::remove(bf16 + "/tokenizer.json");
  fails(bf16, {"tokenizer.json", "missing"});

  const std::string ok = synth(scratch, "tiny-tied", Dtype::F32);
  GgufExportOptions twice;
  twice.model_dir = ok;
  twice.output = scratch.file("twice.gguf");
  export_gguf(twice);
  expect_error([&] { export_gguf(twice); }, {"twice.gguf", "exists", "--force"});
  twice.replace_existing = true;
  export_gguf(twice);
}

TEST(GgufWriter, LayoutIsAlignedAndErrorsAreCaught) {
  ScratchDir scratch;
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  expect_error([&] { w.add_u32("general.architecture", 1); }, "added twice");
  w.add_tensor("a", GgmlType::F32, {3}, [](uint8_t* out, size_t bytes) {
    EXPECT_EQ(bytes, 12u);
    const float v[3] = {1, 2, 3};
    std::memcpy(out, v, 12);
  });
  w.add_tensor("b", GgmlType::F16, {2, 2}, [](uint8_t* out, size_t bytes) {
    for (size_t i = 0; i < bytes / 2; ++i) {
      const uint16_t h = f32_to_f16(static_cast<float>(i));
      std::memcpy(out + 2 * i, &h, 2);
    }
  });
  expect_error([&] { w.add_tensor("q", GgmlType::Q4_0, {2, 48}, nullptr); }, "multiple of 32");
  expect_error([&] { w.add_tensor("a", GgmlType::F32, {1}, nullptr); }, "added twice");
  w.write(scratch.file("w.gguf"));
  const GgufFile g = GgufFile::read(scratch.file("w.gguf"));
  ASSERT_EQ(g.tensors.size(), 2u);
  EXPECT_EQ(g.tensors[1].offset % 32, 0u);
  EXPECT_EQ(g.tensors[1].ne, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(g.data_start % 32, 0u);
  EXPECT_EQ(g.values("a"), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(g.values("b"), (std::vector<float>{0, 1, 2, 3}));
  expect_error([&] { w.write(scratch.file("no/such/dir/x.gguf")); }, "cannot create");
}

}  // namespace
}  // namespace dq4::test
