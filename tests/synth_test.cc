// The streaming writers (safetensors files, sharded checkpoints) and synthetic models.

#include "dq4/convert/synth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dq4/io/checkpoint.h"
#include "dq4/io/checkpoint_writer.h"
#include "dq4/io/model_config.h"
#include "dq4/io/safetensors.h"
#include "dq4/io/safetensors_writer.h"
#include "dq4/model/architecture.h"
#include "dq4/tokenizer/chat_template.h"
#include "dq4/tokenizer/tokenizer.h"
#include "expect_error.h"
#include "fixtures.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

namespace fs = std::filesystem;

TEST(SafetensorsWriter, HeaderIsAlignedAndReadable) {
  ScratchDir dir;
  const std::string path = dir.file("a.safetensors");
  SafetensorsWriter w(path,
                      {{"a", Dtype::F32, {2}}, {"b", Dtype::I8, {3}}, {"e", Dtype::I64, {0}}});
  const int8_t b[3] = {1, -2, 3};
  const float a[2] = {0.5f, -1.0f};
  w.append(a, 3);  // pieces of any size, across tensors
  w.append(reinterpret_cast<const uint8_t*>(a) + 3, 5);
  w.append(b, 3);
  expect_error([&] { w.append(a, 1); }, "more than the 11 the header declares");
  w.finish();
  const std::string bytes = read_file(path);
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  EXPECT_EQ((8 + header) % 8, 0u);
  EXPECT_EQ(bytes.substr(8, 31), R"({"__metadata__":{"format":"pt"})");
  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.tensor("b").as<int8_t>()[1], -2);
  EXPECT_EQ(f.tensor("a").as<float>()[1], -1.0f);
  EXPECT_EQ(f.tensor("e").bytes, 0u);
}

TEST(SafetensorsWriter, MisalignedOrderIsRefused) {
  ScratchDir dir;
  std::vector<TensorSpec> t{{"b", Dtype::I8, {3}}, {"a", Dtype::F32, {2}}, {"c", Dtype::I64, {1}}};
  expect_error([&] { SafetensorsWriter(dir.file("a.safetensors"), t); },
               {"tensor \"a\"", "offset 3", "not aligned"});
  std::sort(t.begin(), t.end(), safetensors_order);
  EXPECT_EQ(t[0].name, "c");
  EXPECT_EQ(t[1].name, "a");
  EXPECT_EQ(t[2].name, "b");
}

// Elements of one size keep the library's dtype order before the name: F32 before I32, BF16
// before F16 (so a module's scales and int4 words land apart, as save_pretrained writes them).
TEST(SafetensorsWriter, OrderFollowsTheLibraryDtypeEnum) {
  std::vector<TensorSpec> t{{"a.weight_packed", Dtype::I32, {1}},
                            {"b.weight_scale", Dtype::F32, {1}},
                            {"a.weight", Dtype::F16, {1}},
                            {"b.weight", Dtype::BF16, {1}},
                            {"a.weight_shape", Dtype::I64, {2}}};
  std::sort(t.begin(), t.end(), safetensors_order);
  std::vector<std::string> names;
  for (const TensorSpec& s : t) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"a.weight_shape", "b.weight_scale", "a.weight_packed",
                                             "b.weight", "a.weight"}));
}

TEST(SafetensorsWriter, MissingDataIsAnError) {
  ScratchDir dir;
  SafetensorsWriter w(dir.file("a.safetensors"), {{"a", Dtype::F32, {2}}});
  w.append("abcd", 4);
  expect_error([&] { w.finish(); }, {"a.safetensors", "only 4 of 8 data bytes"});
}

TEST(CheckpointWriter, PlansShardsLikeTransformers) {
  const std::vector<TensorSpec> t{{"a", Dtype::U8, {40}},
                                  {"b", Dtype::U8, {50}},
                                  {"c", Dtype::U8, {200}},
                                  {"d", Dtype::U8, {10}},
                                  {"e", Dtype::U8, {90}}};
  const auto shards = plan_shards(t, 100);
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[0].size(), 2u);  // a, b
  EXPECT_EQ(shards[1].size(), 1u);  // c, larger than a shard: alone
  EXPECT_EQ(shards[2].size(), 2u);  // d, e
  EXPECT_EQ(plan_shards(t, 1000).size(), 1u);
  expect_error([&] { (void)plan_shards(t, 0); }, "0 bytes");
}

TEST(CheckpointWriter, WritesShardsAndIndex) {
  ScratchDir dir;
  CheckpointWriter w(dir.path(),
                     {{"x", Dtype::U8, {60}}, {"y", Dtype::U8, {60}}, {"z", Dtype::U8, {0}}}, 100);
  const std::vector<uint8_t> data(60, 7);
  w.append(data.data(), 60);
  expect_error([&] { w.finish(); }, {"tensor \"y\"", "1 more were not written"});
  expect_error([&] { w.append(data.data(), 61); }, {"\"y\"", "60 bytes"});
  w.append(data.data(), 60);
  w.finish();
  EXPECT_EQ(w.shard_count(), 2u);
  const nlohmann::json index =
      nlohmann::json::parse(read_file(dir.file("model.safetensors.index.json")));
  EXPECT_EQ(index["metadata"]["total_size"], 120);
  EXPECT_EQ(index["weight_map"]["x"], "model-00001-of-00002.safetensors");
  EXPECT_EQ(index["weight_map"]["z"], "model-00002-of-00002.safetensors");
  const Checkpoint c = Checkpoint::open_dir(dir.path());
  EXPECT_EQ(c.names(), (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(c.tensor("y").data[59], 7);
}

float bf16_value(uint16_t bits) {
  const uint32_t f32_bits = uint32_t{bits} << 16;
  float v;
  std::memcpy(&v, &f32_bits, 4);
  return v;
}

TEST(Synth, TinyPresetIsALlamaModelWithTheExpectedValues) {
  ScratchDir scratch;
  SynthOptions o = synth_preset("tiny");
  o.output_dir = scratch.file("tiny");
  o.seed = 3;
  const SynthReport r = write_synthetic_model(o);
  EXPECT_EQ(r.shards, 1u);

  const ModelConfig config = ModelConfig::read(o.output_dir);
  EXPECT_EQ(config.architecture, "LlamaForCausalLM");
  EXPECT_EQ(config.hidden_size, 96);
  EXPECT_EQ(config.intermediate_size, 200);
  EXPECT_EQ(config.head_dim, 24);
  EXPECT_EQ(config.vocab_size, 384);
  EXPECT_FALSE(config.tie_word_embeddings);
  EXPECT_EQ(config.torch_dtype, "bfloat16");
  EXPECT_TRUE(config.rope_scaling.type.empty());

  const Checkpoint c = Checkpoint::open_dir(o.output_dir);
  EXPECT_EQ(c.names().size(),
            2u + 2 * 2 + 2 * 7 + 1);  // embed, norm, 2 norms + 7 linears a layer, lm_head
  for (const LinearModule& m : Architecture::from_config(config, "config.json").linear_modules())
    EXPECT_EQ(c.tensor(m.name + ".weight").shape,
              (std::vector<int64_t>{m.out_features, m.in_features}));
  // Norm weights are 1 + ~N(0, 0.1^2): never all 1, so that a missing norm shows.
  const TensorView& norm = c.tensor("model.layers.1.input_layernorm.weight");
  const auto norm_bits = norm.as<uint16_t>(Dtype::BF16);
  double norm_sum = 0;
  for (size_t i = 0; i < norm_bits.size(); ++i) {
    const float v = bf16_value(norm_bits[i]);
    EXPECT_NEAR(v, synthetic_value(o, norm.name, i), 0.004 * std::fabs(v));
    norm_sum += std::fabs(v - 1.0);
  }
  EXPECT_NEAR(norm_sum / norm_bits.size(), 0.08, 0.03);  // E|N(0, 0.1^2)| = 0.08

  const TensorView& w = c.tensor("model.layers.0.mlp.down_proj.weight");
  const auto bits = w.as<uint16_t>(Dtype::BF16);
  double sum = 0, squares = 0;
  for (size_t i = 0; i < bits.size(); ++i) {
    const float v = bf16_value(bits[i]);
    if (i < 10) {
      EXPECT_NEAR(v, synthetic_value(o, w.name, i), 0.004 * std::fabs(v) + 1e-6);
    }
    sum += v;
    squares += double{v} * v;
  }
  const double mean = sum / bits.size(), std = std::sqrt(squares / bits.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.005);
  EXPECT_NEAR(std, 0.1, 0.005);
}

// What config.json and the tensors of each tiny preset must say for its architecture.
TEST(Synth, TinyPresetsCarryTheirArchitecture) {
  ScratchDir scratch;
  for (const std::string& name : synth_preset_names()) {
    if (!name.starts_with("tiny")) continue;
    SCOPED_TRACE(name);
    SynthOptions o = synth_preset(name);
    o.dtype = Dtype::F32;
    o.output_dir = scratch.file(name);
    write_synthetic_model(o);
    const ModelConfig c = ModelConfig::read(o.output_dir);
    EXPECT_EQ(c.architecture, o.config.architecture);
    EXPECT_EQ(c.model_type, o.config.model_type);
    EXPECT_EQ(c.rope_scaling.type, o.config.rope_scaling.type);
    EXPECT_EQ(c.rope_scaling.factor, o.config.rope_scaling.factor);
    EXPECT_EQ(c.rope_scaling.original_max_position_embeddings,
              o.config.rope_scaling.original_max_position_embeddings);
    EXPECT_EQ(c.rope_scaling.factor_given, o.config.rope_scaling.factor_given);
    EXPECT_TRUE(c.rope_scaling.other_keys.empty());
    EXPECT_EQ(c.sliding_window, o.config.sliding_window);
    EXPECT_EQ(c.attention_bias, o.config.attention_bias);
    EXPECT_EQ(c.tie_word_embeddings, o.config.tie_word_embeddings);
    EXPECT_EQ(c.rms_norm_eps, o.config.rms_norm_eps);

    const Checkpoint ckpt = Checkpoint::open_dir(o.output_dir);
    EXPECT_EQ((ckpt.find("lm_head.weight") != nullptr), !c.tie_word_embeddings);
    const bool olmoe = name == "tiny-olmoe";
    // Norms after each sublayer and none before.
    const bool olmo2 = name == "tiny-olmo2" || name == "tiny-olmo3" || name == "tiny-exaone4";
    const bool qk_norm = name == "tiny-qwen3" || name == "tiny-qwen3-moe" ||
                         name == "tiny-gemma3" || name == "tiny-glm4-moe" || olmoe || olmo2;
    EXPECT_EQ((ckpt.find("model.layers.1.self_attn.q_norm.weight") != nullptr), qk_norm);
    EXPECT_EQ((ckpt.find("model.layers.1.self_attn.k_norm.weight") != nullptr), qk_norm);
    const bool gemma = name.starts_with("tiny-gemma");
    EXPECT_EQ((ckpt.find("model.layers.1.pre_feedforward_layernorm.weight") != nullptr), gemma);
    EXPECT_EQ((ckpt.find("model.layers.1.post_feedforward_layernorm.weight") != nullptr),
              gemma || olmo2);
    EXPECT_EQ((ckpt.find("model.layers.1.input_layernorm.weight") != nullptr), !olmo2);
    const bool phi3 = name == "tiny-phi3";
    EXPECT_EQ((ckpt.find("model.layers.0.self_attn.qkv_proj.weight") != nullptr), phi3);
    EXPECT_EQ((ckpt.find("model.layers.0.mlp.gate_up_proj.weight") != nullptr),
              phi3 || name == "tiny-glm4");
    if (phi3) {
      EXPECT_EQ(c.partial_rotary_factor, 0.75);
      EXPECT_EQ(c.rope_scaling.long_factor, o.config.rope_scaling.long_factor);
      EXPECT_EQ(c.rope_scaling.short_factor, o.config.rope_scaling.short_factor);
      EXPECT_EQ(c.original_max_position_embeddings, 256);
    }
    EXPECT_EQ(c.embedding_multiplier, o.config.embedding_multiplier);
    EXPECT_EQ(c.attention_multiplier, o.config.attention_multiplier);
    EXPECT_EQ(c.residual_multiplier, o.config.residual_multiplier);
    EXPECT_EQ(c.logits_scaling, o.config.logits_scaling);
    EXPECT_EQ(c.logits_scaling > 0, name.starts_with("tiny-granite"));
    // Granite 4: the MLP as its shared_mlp (gate and up fused), layer types, the rope switch.
    const bool granite4 = name.starts_with("tiny-granite4");
    EXPECT_EQ(ckpt.find("model.layers.1.shared_mlp.input_linear.weight") != nullptr,
              granite4 || name == "tiny-granitemoe-shared");
    if (name == "tiny-granite4-moe") {
      EXPECT_EQ(c.num_experts, 8);
    }
    EXPECT_EQ(ckpt.find("model.layers.1.mlp.up_proj.weight") == nullptr,
              granite4 || phi3 || name == "tiny-glm4" || c.num_experts > 0);
    EXPECT_EQ(c.shared_intermediate_size, o.config.shared_intermediate_size);
    EXPECT_EQ(c.position_embedding_type, o.config.position_embedding_type);
    if (granite4) {
      EXPECT_EQ(c.layer_types,
                std::vector<std::string>(static_cast<size_t>(c.num_hidden_layers), "attention"));
      EXPECT_EQ(c.position_embedding_type.empty(), name.ends_with("-nope"));
    }
    EXPECT_EQ(c.no_rope_layers, o.config.no_rope_layers);
    EXPECT_EQ(c.no_rope_layers.empty(), name != "tiny-smollm3");
    if (gemma) {
      EXPECT_EQ(c.attn_logit_softcapping, o.config.attn_logit_softcapping);
      EXPECT_EQ(c.final_logit_softcapping, o.config.final_logit_softcapping);
      EXPECT_EQ(c.query_pre_attn_scalar, o.config.query_pre_attn_scalar);
      EXPECT_EQ(c.rope_local_base_freq, o.config.rope_local_base_freq);
    }
    if (qk_norm) {  // per head, or OLMoE's and OLMo's over the whole k projection
      const auto k_norm = ckpt.tensor("model.layers.1.self_attn.k_norm.weight");
      const bool whole = olmoe || (olmo2 && name != "tiny-exaone4");
      EXPECT_EQ(k_norm.shape,
                (std::vector<int64_t>{whole ? c.num_key_value_heads * c.head_dim : c.head_dim}));
      EXPECT_NE(k_norm.as<float>()[0], 1.0f);
    }
    // The mixtures' fields as the preset gives them, and their experts' tensors.
    EXPECT_EQ(c.num_experts, o.config.num_experts);
    EXPECT_EQ(c.num_experts_per_tok, o.config.num_experts_per_tok);
    EXPECT_EQ(c.moe_intermediate_size, o.config.moe_intermediate_size);
    EXPECT_EQ(c.shared_expert_intermediate_size, o.config.shared_expert_intermediate_size);
    if (name != "tiny-mixtral") {  // Mixtral's config has no norm_topk_prob: it always renormalizes
      EXPECT_EQ(c.norm_topk_prob, o.config.norm_topk_prob);
    }
    // Granite's mixtures: the experts stacked, the router under its own name, the shared MLP.
    if (name.starts_with("tiny-granitemoe") || name == "tiny-granite4-moe") {
      const std::string moe = "model.layers.1.block_sparse_moe.";
      EXPECT_EQ(ckpt.tensor(moe + "input_linear.weight").shape,
                (std::vector<int64_t>{c.num_experts, 2 * c.intermediate_size, c.hidden_size}));
      EXPECT_EQ(ckpt.tensor(moe + "output_linear.weight").shape,
                (std::vector<int64_t>{c.num_experts, c.hidden_size, c.intermediate_size}));
      EXPECT_EQ(ckpt.tensor(moe + "router.layer.weight").shape,
                (std::vector<int64_t>{c.num_experts, c.hidden_size}));
      const bool shared = name != "tiny-granitemoe";
      EXPECT_EQ(ckpt.find("model.layers.1.shared_mlp.output_linear.weight") != nullptr, shared);
      EXPECT_EQ(c.shared_intermediate_size, shared ? 96 : 0);
    } else if (c.num_experts > 0) {
      const std::string moe = name == "tiny-mixtral" ? "block_sparse_moe." : "mlp.";
      const std::string last = "model.layers.1." + moe + "experts." +
                               std::to_string(c.num_experts - 1) +
                               (name == "tiny-mixtral" ? ".w2.weight" : ".down_proj.weight");
      EXPECT_NE(ckpt.find(last), nullptr) << last;
      EXPECT_EQ(ckpt.tensor("model.layers.1." + moe + "gate.weight").shape,
                (std::vector<int64_t>{c.num_experts, c.hidden_size}));
      EXPECT_EQ(ckpt.find("model.layers.1.mlp.shared_expert_gate.weight") != nullptr,
                name == "tiny-qwen2-moe");
      // Ernie 4.5's and GLM-4 MoE's dense first layer, ungated shared experts and selection bias
      // (f32; Ernie's as one row).
      const bool ernie = name == "tiny-ernie4_5-moe", glm = name == "tiny-glm4-moe";
      EXPECT_EQ(ckpt.find("model.layers.0." + moe + "gate.weight") == nullptr, ernie || glm);
      EXPECT_EQ(ckpt.find("model.layers.1.mlp.shared_experts.down_proj.weight") != nullptr,
                ernie || glm);
      if (ernie || glm) {
        const TensorView& bias =
            ckpt.tensor(ernie ? "model.layers.1.mlp.moe_statics.e_score_correction_bias"
                              : "model.layers.1.mlp.gate.e_score_correction_bias");
        EXPECT_EQ(bias.shape, ernie ? (std::vector<int64_t>{1, c.num_experts})
                                    : (std::vector<int64_t>{c.num_experts}));
        EXPECT_EQ(bias.dtype, Dtype::F32);
        EXPECT_NE(bias.as<float>()[0], 0.0f);
        EXPECT_EQ(c.moe_num_shared_experts, ernie ? 2 : 1);
        EXPECT_EQ(c.first_sparse_layer, 1);
      }
      EXPECT_EQ(c.moe_use_aux_free, ernie);
      if (glm) {
        EXPECT_EQ(c.expert_groups, 2);
        EXPECT_EQ(c.expert_groups_used, 1);
        EXPECT_EQ(c.routed_scaling_factor, 2.5);
        EXPECT_TRUE(c.use_qk_norm);
      }
    }
    const bool bias = name.starts_with("tiny-qwen2") || name.starts_with("tiny-glm4");
    for (const char* proj : {"q_proj", "k_proj", "v_proj"})
      EXPECT_EQ(ckpt.find(std::string("model.layers.0.self_attn.") + proj + ".bias") != nullptr,
                bias);
    EXPECT_FALSE((ckpt.find("model.layers.0.self_attn.o_proj.bias") != nullptr));
    if (bias) {  // nonzero, so that a dropped bias shows
      const auto b = ckpt.tensor("model.layers.0.self_attn.k_proj.bias").as<float>();
      double mean_abs = 0;
      for (float v : b) mean_abs += std::fabs(v) / b.size();
      EXPECT_GT(mean_abs, 0.04);
    }
  }
}

// Every preset's tokenizer loads, fills the vocabulary exactly, round-trips text and names its
// special tokens in tokenizer_config.json, generation_config.json and config.json alike. The real
// shapes are shrunk (one narrow layer) but keep their vocabulary.
TEST(Synth, EveryPresetHasAWorkingTokenizer) {
  ScratchDir scratch;
  for (const std::string& name : synth_preset_names()) {
    SCOPED_TRACE(name);
    SynthOptions o = synth_preset(name);
    o.config.num_hidden_layers = 1;
    o.config.hidden_size = 16;
    o.config.intermediate_size = 16;
    o.config.num_attention_heads = 2;
    o.config.num_key_value_heads = 2;
    // longrope's factors are one per rotary frequency: the head keeps its size.
    if (o.config.rope_scaling.type != "longrope") o.config.head_dim = 8;
    o.output_dir = scratch.file(name);
    write_synthetic_model(o);

    const ModelConfig c = ModelConfig::read(o.output_dir);
    const Tokenizer t = Tokenizer::from_directory(o.output_dir);
    EXPECT_EQ(static_cast<int64_t>(t.vocab_size()), c.vocab_size);
    EXPECT_TRUE(t.id_to_token(static_cast<TokenId>(c.vocab_size - 1)).has_value());
    EXPECT_FALSE(t.id_to_token(static_cast<TokenId>(c.vocab_size)).has_value());
    const std::string text = "Once upon a time, the little boat sang 42 songs.\nThe end!";
    const std::vector<TokenId> ids = t.encode(text);
    EXPECT_LT(ids.size() * 3, text.size() * 2) << "merges make common words few tokens";
    EXPECT_EQ(t.decode(ids), text);
    for (TokenId id : ids) EXPECT_LT(id, c.vocab_size);

    const bool qwen = c.architecture.starts_with("Qwen");
    ASSERT_FALSE(c.eos_token_ids.empty());
    const nlohmann::json generation =
        nlohmann::json::parse(read_file(o.output_dir + "/generation_config.json"));
    EXPECT_EQ(generation["eos_token_id"].get<std::vector<int32_t>>(), c.eos_token_ids);
    ASSERT_TRUE(t.eos_id().has_value());
    EXPECT_NE(std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), *t.eos_id()),
              c.eos_token_ids.end());
    const ChatTemplate chat = ChatTemplate::from_tokenizer_config(o.output_dir);
    const std::string prompt =
        chat.render(R"({"messages": [{"role": "user", "content": "Hi"}]})", true);
    if (qwen) {
      EXPECT_FALSE(t.bos_id().has_value());
      EXPECT_EQ(c.bos_token_id, -1);
      EXPECT_EQ(t.id_to_token(*t.eos_id()), "<|im_end|>");
      EXPECT_EQ(prompt, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    } else {
      ASSERT_TRUE(t.bos_id().has_value());
      EXPECT_EQ(*t.bos_id(), c.bos_token_id);
      EXPECT_EQ(t.encode("Hi", true).front(), c.bos_token_id);
      EXPECT_EQ(t.id_to_token(*t.eos_id()), "<|eot_id|>");
      EXPECT_EQ(prompt,
                "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                "<|start_header_id|>assistant<|end_header_id|>\n\n");
    }
    if (c.vocab_size == 128256) {  // Llama 3's own special ids
      EXPECT_EQ(c.bos_token_id, 128000);
      EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{128001, 128008, 128009}));
      EXPECT_EQ(t.token_to_id("<|start_header_id|>"), 128006);
    }
    // The special tokens encode as themselves, one id each.
    const std::vector<TokenId> special = t.encode(prompt);
    EXPECT_EQ(t.decode(special), prompt);
    EXPECT_TRUE(t.is_special(special.front()));
  }
}

// A tokenizer's vocabulary as the family sizes it: exact for Llama and Mistral, a multiple of
// 128 for Qwen.
TEST(Synth, TokenizerVocabSizeFollowsTheFamily) {
  EXPECT_EQ(tokenizer_vocab_size(fixture_path("tokenizer-llama3"), "LlamaForCausalLM"), 128256);
  EXPECT_EQ(tokenizer_vocab_size(fixture_path("tokenizer-mistral"), "MistralForCausalLM"), 32000);
  EXPECT_EQ(tokenizer_vocab_size(fixture_path("tokenizer-qwen3"), "Qwen3ForCausalLM"), 151680);
  EXPECT_EQ(tokenizer_vocab_size(fixture_path("tokenizer-qwen3"), "Qwen2ForCausalLM"), 151680);
  ScratchDir scratch;
  SynthOptions o = synth_preset("tiny-qwen3");
  o.tokenizer_dir = fixture_path("tokenizer-qwen3");
  o.output_dir = scratch.file("m");
  try {
    write_synthetic_model(o);
    ADD_FAILURE() << "a 384-row embedding for a 151,669-id tokenizer was written";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocab_size 384 is smaller than the tokenizer"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(o.output_dir));
}

TEST(Synth, RealShapePresets) {
  const SynthOptions one = synth_preset("llama-1b");
  EXPECT_EQ(one.config.hidden_size, 2048);
  EXPECT_EQ(one.config.rope_scaling.type, "llama3");
  EXPECT_EQ(one.config.rope_scaling.factor, 32.0);
  EXPECT_EQ(one.config.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(one.config.rope_theta, 500000.0);
  EXPECT_TRUE(one.config.tie_word_embeddings);
  const SynthOptions three = synth_preset("llama-3b");
  EXPECT_EQ(three.config.num_hidden_layers, 28);
  EXPECT_EQ(three.config.head_dim, 128);
  EXPECT_EQ(three.config.num_attention_heads, 24);
  const SynthOptions eight = synth_preset("llama-8b");
  EXPECT_EQ(eight.config.intermediate_size, 14336);
  EXPECT_FALSE(eight.config.tie_word_embeddings);
  EXPECT_EQ(eight.config.rope_scaling.factor, 8.0);
  const SynthOptions qwen = synth_preset("qwen3-0.6b");
  EXPECT_EQ(qwen.config.architecture, "Qwen3ForCausalLM");
  EXPECT_EQ(qwen.config.vocab_size, 151936);
  EXPECT_EQ(qwen.config.rms_norm_eps, 1e-6);
  EXPECT_EQ(qwen.config.rope_theta, 1000000.0);
  for (const SynthOptions* o : {&one, &three, &eight, &qwen}) {
    EXPECT_EQ(o->norm_spread, 0.0f);
    EXPECT_EQ(o->weight_std, 0.02f);
  }
}

TEST(Synth, DeterministicAndIndependentOfSharding) {
  ScratchDir scratch;
  SynthOptions o = synth_preset("tiny");
  o.dtype = Dtype::F32;
  o.output_dir = scratch.file("one");
  write_synthetic_model(o);
  o.output_dir = scratch.file("sharded");
  o.max_shard_bytes = 50'000;
  const SynthReport r = write_synthetic_model(o);
  EXPECT_GT(r.shards, 3u);
  const Checkpoint one = Checkpoint::open_dir(scratch.file("one"));
  const Checkpoint sharded = Checkpoint::open_dir(scratch.file("sharded"));
  ASSERT_EQ(one.names(), sharded.names());
  for (const std::string& name : one.names())
    EXPECT_EQ(0,
              std::memcmp(one.tensor(name).data, sharded.tensor(name).data, one.tensor(name).bytes))
        << name;
  o.seed = 1;
  o.output_dir = scratch.file("other-seed");
  write_synthetic_model(o);
  const Checkpoint other = Checkpoint::open_dir(o.output_dir);
  EXPECT_NE(0, std::memcmp(one.tensor("lm_head.weight").data, other.tensor("lm_head.weight").data,
                           one.tensor("lm_head.weight").bytes));
}

TEST(Synth, Errors) {
  ScratchDir scratch;
  expect_error([] { (void)synth_preset("llama-70b"); }, {"llama-70b", "llama-1b, llama-3b"});
  expect_error([] { (void)synth_preset("tiny-gpt"); }, {"tiny-gpt", "tiny-qwen3"});
  SynthOptions o = synth_preset("tiny");
  o.output_dir = scratch.file("m");
  o.config.num_key_value_heads = 3;
  expect_error([&] { write_synthetic_model(o); }, "num_key_value_heads 3");
  o = synth_preset("tiny");
  o.output_dir = scratch.file("m");
  o.dtype = Dtype::I8;
  expect_error([&] { write_synthetic_model(o); }, "I8");
  o.dtype = Dtype::F16;
  o.tokenizer_dir = scratch.file("nowhere");
  expect_error([&] { write_synthetic_model(o); }, {"nowhere", "does not exist"});
  o.tokenizer_dir.clear();
  o.config.vocab_size = 200;
  expect_error([&] { write_synthetic_model(o); }, {"vocab_size 200", "256 byte tokens"});
  EXPECT_FALSE(fs::exists(scratch.file("m")));
}

}  // namespace
}  // namespace dq4::test
