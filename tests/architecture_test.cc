// Architectures from config.json: names, fusion groups, biases, q/k norms, windows, rope, and
// what is refused.

#include "dq4/model/architecture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "expect_error.h"
#include "fixtures.h"
#include "stories_fixture.h"

namespace dq4 {
namespace {

using test::expect_error;

using test::stories_config;

Architecture architecture(const nlohmann::json& config) {
  return Architecture::from_config(ModelConfig::parse(config.dump(), "config.json"), "config.json");
}

TEST(Architecture, Stories260KModules) {
  const auto modules =
      Architecture::read(test::fixtures_dir() + "/stories260K-hf").linear_modules();
  ASSERT_EQ(modules.size(), 35u);  // 7 per layer, the head is the tied embedding
  EXPECT_EQ(modules[1].name, "model.layers.0.self_attn.k_proj");
  EXPECT_EQ(modules[1].out_features, 32);
  EXPECT_EQ(modules[1].in_features, 64);
  EXPECT_EQ(modules[6].name, "model.layers.0.mlp.down_proj");
  EXPECT_EQ(modules[6].out_features, 64);
  EXPECT_EQ(modules[6].in_features, 172);
}

TEST(Architecture, GroupsShareAnInputAndTheUntiedHeadComesLast) {
  nlohmann::json c = stories_config();
  c["tie_word_embeddings"] = false;
  const auto groups = architecture(c).linear_groups();
  ASSERT_EQ(groups.size(), 5u * 4 + 1);
  EXPECT_EQ(groups[0].size(), 3u);
  EXPECT_EQ(groups[0][2].name, "model.layers.0.self_attn.v_proj");
  EXPECT_EQ(groups[2][1].name, "model.layers.0.mlp.up_proj");
  EXPECT_EQ(groups[7][0].name, "model.layers.1.mlp.down_proj");
  EXPECT_EQ(groups.back()[0].name, "lm_head");
  EXPECT_EQ(groups.back()[0].out_features, 512);
  for (const auto& group : groups)
    for (const auto& m : group) EXPECT_EQ(m.in_features, group[0].in_features) << m.name;
}

TEST(Architecture, Qwen2HasQkvBiasOnly) {
  nlohmann::json c = stories_config();
  c["architectures"] = {"Qwen2ForCausalLM"};
  c.erase("attention_bias");
  const LayerModules l = architecture(c).layer(0);
  for (const LinearModule& m : l.attention_input) EXPECT_TRUE(m.has_bias) << m.name;
  EXPECT_FALSE(l.attention_output.has_bias);
  EXPECT_FALSE(l.mlp_input[0].has_bias);
}

TEST(Architecture, RefusesWhatItDoesNotRun) {
  nlohmann::json c = stories_config();
  c["architectures"] = {"GemmaForCausalLM"};
  expect_error([&] { architecture(c); }, {"config.json", "architectures", "GemmaForCausalLM"});
  c = stories_config();
  c["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 4.0}};
  expect_error([&] { architecture(c); }, {"rope_scaling.rope_type", "dynamic"});
  c = stories_config();
  c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"beta_fast", 16}};
  expect_error([&] { architecture(c); }, {"rope_scaling.beta_fast", "'yarn'", "'linear'"});
  c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"attention_factor", 1.2}};
  expect_error([&] { architecture(c); }, {"rope_scaling.attention_factor"});
  c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_foo", 1}};
  expect_error([&] { architecture(c); }, {"rope_scaling.rope_foo"});
  c = stories_config();
  c["hidden_act"] = "gelu";
  expect_error([&] { architecture(c); }, {"hidden_act", "gelu"});
  c = stories_config();
  c["final_logit_softcapping"] = 30.0;
  expect_error([&] { architecture(c); }, {"final_logit_softcapping"});
  c = stories_config();
  c["layer_types"] = {"full_attention", "full_attention", "full_attention", "full_attention",
                      "sliding_attention"};
  c["sliding_window"] = 16;
  expect_error([&] { architecture(c); }, {"layer_types", "OLMo 3 and EXAONE 4 only"});
  c = stories_config();
  c["partial_rotary_factor"] = 0.5;
  expect_error([&] { architecture(c); }, {"partial_rotary_factor"});
}

// Qwen's window: with use_sliding_window, on the sliding_attention layers of layer_types (which
// newer transformers write into every Qwen config), else on the layers from max_window_layers on.
TEST(Architecture, QwenLayerTypesAndWindows) {
  nlohmann::json c = stories_config();  // 5 layers
  c["architectures"] = {"Qwen3ForCausalLM"};
  c["use_sliding_window"] = false;
  c["sliding_window"] = nullptr;
  c["max_window_layers"] = 28;
  c["layer_types"] = std::vector<std::string>(5, "full_attention");
  EXPECT_EQ(architecture(c).layer_window, std::vector<int64_t>(5, 0));
  c["use_sliding_window"] = true;
  c["sliding_window"] = 64;
  c["layer_types"] = {"full_attention", "sliding_attention", "full_attention", "sliding_attention",
                      "sliding_attention"};
  EXPECT_EQ(architecture(c).layer_window, (std::vector<int64_t>{0, 64, 0, 64, 64}));
  c.erase("layer_types");
  c["max_window_layers"] = 3;
  EXPECT_EQ(architecture(c).layer_window, (std::vector<int64_t>{0, 0, 0, 64, 64}));
  c["use_sliding_window"] = false;  // the window off: sliding_window is not read
  EXPECT_EQ(architecture(c).layer_window, std::vector<int64_t>(5, 0));
  c["layer_types"] = {"full_attention"};
  expect_error([&] { architecture(c); }, {"layer_types", "one entry per layer (5)"});
  c["layer_types"] = std::vector<std::string>(5, "chunked_attention");
  expect_error([&] { architecture(c); }, {"layer_types", "chunked_attention"});
  c.erase("layer_types");
  c["max_window_layers"] = -1;
  expect_error([&] { architecture(c); }, {"max_window_layers"});
  // Llama with layer_types all full_attention (as some tools write them) runs as before.
  c = stories_config();
  c["layer_types"] = std::vector<std::string>(5, "full_attention");
  EXPECT_EQ(architecture(c).layer_window, std::vector<int64_t>(5, 0));
}

TEST(Architecture, NamesFusionGroupsAndVariants) {
  nlohmann::json c = stories_config();
  c["architectures"] = {"Qwen3ForCausalLM"};
  c["tie_word_embeddings"] = false;
  const Architecture q3 = architecture(c);
  EXPECT_TRUE(q3.qk_norm);
  ASSERT_TRUE(q3.head.has_value());
  const LayerModules l = q3.layer(2);
  EXPECT_EQ(l.q_norm, "model.layers.2.self_attn.q_norm.weight");
  ASSERT_EQ(l.attention_input.size(), 3u);
  EXPECT_EQ(l.attention_input[1].name, "model.layers.2.self_attn.k_proj");
  EXPECT_EQ(l.mlp_input[0].name, "model.layers.2.mlp.gate_proj");
  EXPECT_EQ(q3.linear_groups().size(), 5u * 4 + 1);

  c = stories_config();
  c["architectures"] = {"MistralForCausalLM"};
  c["sliding_window"] = 16;
  EXPECT_EQ(architecture(c).sliding_window, 16);
  c["architectures"] = {"LlamaForCausalLM"};  // Llama's modeling code ignores the field
  EXPECT_EQ(architecture(c).sliding_window, 0);
}

TEST(Architecture, GemmaWindowsScalesAndNorms) {
  nlohmann::json c = stories_config();  // 5 layers, head_dim 8
  c["architectures"] = {"Gemma2ForCausalLM"};
  c["hidden_act"] = "gelu_pytorch_tanh";
  c["sliding_window"] = 16;
  c["query_pre_attn_scalar"] = 32;
  c["attn_logit_softcapping"] = 50.0;
  c["final_logit_softcapping"] = 30.0;
  c.erase("tie_word_embeddings");  // Gemma ties unless told otherwise
  const Architecture g2 = architecture(c);
  EXPECT_TRUE(g2.gemma);
  EXPECT_EQ(g2.activation, Activation::gelu_tanh);
  EXPECT_FALSE(g2.head.has_value());
  EXPECT_EQ(g2.layer_window, (std::vector<int64_t>{16, 0, 16, 0, 16}));  // even layers local
  EXPECT_EQ(g2.attention_scale, static_cast<float>(1 / std::sqrt(32.0)));
  EXPECT_EQ(g2.attention_softcap, 50.0f);
  EXPECT_EQ(g2.final_softcap, 30.0f);
  EXPECT_FALSE(g2.qk_norm);
  EXPECT_EQ(g2.layer(1).pre_feedforward_norm, "model.layers.1.pre_feedforward_layernorm.weight");
  // Gemma's MLP runs hidden_activation, whatever hidden_act says (as transformers).
  c["hidden_act"] = "gelu";
  expect_error([&] { architecture(c); }, {"hidden_act", "gelu"});
  c["hidden_activation"] = "gelu_pytorch_tanh";
  EXPECT_EQ(architecture(c).activation, Activation::gelu_tanh);
  c["hidden_act"] = "gelu_pytorch_tanh";
  c["hidden_activation"] = "gelu";
  expect_error([&] { architecture(c); }, {"hidden_activation", "gelu"});
  c.erase("hidden_activation");
  // A cap or scale of zero or below would divide by zero or turn the logits over; null or absent
  // is the way to turn a cap off.
  for (const char* field : {"attn_logit_softcapping", "final_logit_softcapping",
                            "query_pre_attn_scalar", "rope_local_base_freq"})
    for (double bad : {0.0, -1.0}) {
      nlohmann::json b = c;
      b[field] = bad;
      expect_error([&] { architecture(b); }, {"config.json", field, "positive"});
    }
  for (const char* field : {"sliding_window_pattern", "original_max_position_embeddings"}) {
    nlohmann::json b = c;
    b[field] = 0;
    expect_error([&] { architecture(b); }, {"config.json", field, "positive"});
  }
  c["attn_logit_softcapping"] = nullptr;
  EXPECT_EQ(architecture(c).attention_softcap, 0.0f);

  // Gemma 3's multimodal checkpoint: the text model of text_config, its tensors under
  // language_model., Gemma3TextConfig's defaults where text_config is silent.
  nlohmann::json text = stories_config();
  text.erase("architectures");
  text.erase("hidden_act");
  text.erase("rope_theta");
  text.erase("eos_token_id");  // from the top level, as the hub's configs have it
  text["model_type"] = "gemma3_text";
  text["sliding_window"] = 4;
  text["sliding_window_pattern"] = 2;
  text["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  const nlohmann::json mm = {{"architectures", {"Gemma3ForConditionalGeneration"}},
                             {"text_config", text},
                             {"eos_token_id", {1, 106}}};
  const Architecture g3 = architecture(mm);
  EXPECT_TRUE(g3.qk_norm);
  EXPECT_EQ(g3.config.hidden_size, text["hidden_size"].get<int64_t>());
  EXPECT_EQ(g3.config.eos_token_ids, (std::vector<int32_t>{1, 106}));
  EXPECT_EQ(g3.config.rope_theta, 1000000.0);
  EXPECT_EQ(g3.local_rope_theta, 10000.0);
  EXPECT_EQ(g3.embedding, "language_model.model.embed_tokens.weight");
  EXPECT_EQ(g3.layer(0).q_norm, "language_model.model.layers.0.self_attn.q_norm.weight");
  EXPECT_EQ(g3.layer_window, (std::vector<int64_t>{4, 0, 4, 0, 4}));
  EXPECT_TRUE(g3.local_layer(0));
  EXPECT_FALSE(g3.local_layer(1));
  // Local layers: base 10000, unscaled; global ones: rope_theta with the linear factor.
  EXPECT_EQ(g3.local_rope_inv_freq()[1], 1.0f / std::pow(10000.0f, 2.0f / 8.0f));
  EXPECT_EQ(g3.rope_inv_freq()[1], 1.0f / std::pow(1000000.0f, 2.0f / 8.0f) / 8.0f);
  // Gemma 3's is the scaled context already (vLLM).
  EXPECT_EQ(g3.context_length, text["max_position_embeddings"].get<int64_t>());
  expect_error(
      [&] {
        architecture({{"architectures", {"Gemma3ForConditionalGeneration"}}});
      },
      {"text_config"});
}

TEST(Architecture, Phi3FusedModulesPartialRotaryAndLongrope) {
  nlohmann::json c = stories_config();  // head_dim 8, 8 heads, 4 kv heads, intermediate 172
  c["architectures"] = {"Phi3ForCausalLM"};
  c["partial_rotary_factor"] = 0.5;
  c["max_position_embeddings"] = 4096;
  c["original_max_position_embeddings"] = 1024;
  c["rope_scaling"] = {
      {"type", "longrope"}, {"short_factor", {1.0, 1.5}}, {"long_factor", {2.0, 3.0}}};
  const Architecture a = architecture(c);
  const LayerModules l = a.layer(1);
  ASSERT_EQ(l.attention_input.size(), 1u);
  EXPECT_EQ(l.attention_input[0].name, "model.layers.1.self_attn.qkv_proj");
  EXPECT_EQ(l.attention_input[0].out_features, 8 * 8 + 2 * 4 * 8);
  ASSERT_EQ(l.mlp_input.size(), 1u);
  EXPECT_EQ(l.mlp_input[0].name, "model.layers.1.mlp.gate_up_proj");
  EXPECT_EQ(l.mlp_input[0].out_features, 2 * 172);
  EXPECT_EQ(a.rotary_dim, 4);
  EXPECT_EQ(a.longrope_original_context, 1024);
  // transformers: sqrt(1 + ln(4096 / 1024) / ln(1024)).
  EXPECT_EQ(a.rope_attention_factor,
            static_cast<float>(std::sqrt(1 + std::log(4.0) / std::log(1024.0))));
  const float base1 = std::pow(10000.0f, 2.0f / 4.0f);
  EXPECT_EQ(a.rope_inv_freq()[1], 1.0f / (1.5f * base1));
  EXPECT_EQ(a.rope_inv_freq(true)[1], 1.0f / (3.0f * base1));
  c["rope_scaling"]["attention_factor"] = 1.25;  // given: used as is
  EXPECT_EQ(architecture(c).rope_attention_factor, 1.25f);
  c["rope_scaling"]["long_factor"] = {2.0};
  expect_error([&] { architecture(c); }, {"short_factor", "rotary_dim / 2 = 2"});
}

TEST(Architecture, Llama3RopeScalingFollowsTransformers) {
  nlohmann::json c = stories_config();
  c["head_dim"] = 64;
  c["rope_theta"] = 500000.0;
  c["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 32.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  const std::vector<float> inv = architecture(c).rope_inv_freq();
  ASSERT_EQ(inv.size(), 32u);
  for (size_t i = 0; i < inv.size(); ++i) {
    const double base = 1.0 / std::pow(500000.0, 2.0 * i / 64.0);
    const double wavelen = 2 * M_PI / base;
    double want = base;
    if (wavelen > 8192.0) {
      want = base / 32;
    } else if (wavelen >= 8192.0 / 4) {
      const double smooth = (8192.0 / wavelen - 1) / (4 - 1);
      want = (1 - smooth) * base / 32 + smooth * base;
    }
    EXPECT_NEAR(inv[i], want, 2e-6 * want) << i;
  }
  c["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
  const Architecture a = architecture(c);
  EXPECT_NEAR(a.rope_inv_freq()[1], 1.0 / std::pow(500000.0, 2.0 / 64) / 4, 1e-7);
  // The context linear scaling stretches to, as vLLM.
  EXPECT_EQ(a.context_length, 4 * c["max_position_embeddings"].get<int64_t>());
}

TEST(Architecture, GraniteMultipliers) {
  nlohmann::json c = stories_config();
  c["architectures"] = {"GraniteForCausalLM"};
  c["embedding_multiplier"] = 12.0;
  c["attention_multiplier"] = 0.015625;
  c["residual_multiplier"] = 0.22;
  c["logits_scaling"] = 8.0;
  Architecture a = architecture(c);
  EXPECT_EQ(a.embedding_multiplier, 12.0f);
  EXPECT_EQ(a.attention_scale, 0.015625f);  // in place of head_dim^-1/2
  EXPECT_EQ(a.residual_multiplier, 0.22f);
  EXPECT_EQ(a.logits_divisor, 8.0f);
  EXPECT_EQ(a.layer(0).attention_input[0].name, "model.layers.0.self_attn.q_proj");
  // transformers' defaults: every multiplier 1, the attention's too.
  for (const char* key :
       {"embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"})
    c.erase(key);
  a = architecture(c);
  EXPECT_EQ(a.embedding_multiplier, 1.0f);
  EXPECT_EQ(a.attention_scale, 1.0f);
  EXPECT_EQ(a.residual_multiplier, 1.0f);
  EXPECT_EQ(a.logits_divisor, 1.0f);
  c["residual_multiplier"] = -0.5;
  expect_error([&] { architecture(c); }, {"residual_multiplier", "positive"});
  c["residual_multiplier"] = 1e300;
  expect_error([&] { architecture(c); }, {"residual_multiplier", "range of a float"});
  // Other families do not run Granite's scalars.
  c = stories_config();
  c["logits_scaling"] = 8.0;
  expect_error([&] { architecture(c); }, {"logits_scaling", "changes the forward pass"});
}

// Granite 4 without mamba layers or experts (GraniteMoeHybrid): Granite's scalars, the
// shared_mlp as the one MLP (gate and up fused, shared_intermediate_size wide), rotary embeddings
// only where position_embedding_type says "rope"; what a hybrid or mixture config holds refused.
TEST(Architecture, Granite4DenseAttentionOnly) {
  nlohmann::json c = stories_config();
  c["architectures"] = {"GraniteMoeHybridForCausalLM"};
  c["model_type"] = "granitemoehybrid";
  c["intermediate_size"] = 8192;  // the experts' width, unused without experts
  c["shared_intermediate_size"] = 96;
  c["num_local_experts"] = 0;
  c["layer_types"] = std::vector<std::string>(5, "attention");
  c["position_embedding_type"] = "rope";
  c["residual_multiplier"] = 0.22;
  c["mamba_n_heads"] = 32;  // read past: no layer is a mamba layer
  Architecture a = architecture(c);
  EXPECT_EQ(a.config.intermediate_size, 96);
  EXPECT_EQ(a.residual_multiplier, 0.22f);
  const LayerModules l = a.layer(4);
  ASSERT_EQ(l.mlp_input.size(), 1u);
  EXPECT_EQ(l.mlp_input[0].name, "model.layers.4.shared_mlp.input_linear");
  EXPECT_EQ(l.mlp_input[0].out_features, 2 * 96);
  EXPECT_EQ(l.mlp_output.name, "model.layers.4.shared_mlp.output_linear");
  EXPECT_EQ(l.mlp_output.in_features, 96);
  EXPECT_EQ(l.input_norm, "model.layers.4.input_layernorm.weight");
  EXPECT_EQ(l.post_attention_norm, "model.layers.4.post_attention_layernorm.weight");
  EXPECT_TRUE(l.experts.empty());
  EXPECT_EQ(a.layer_rope, std::vector<bool>(5, true));
  // transformers' default (None) and null: no rotary embeddings in any layer.
  c.erase("position_embedding_type");
  EXPECT_EQ(architecture(c).layer_rope, std::vector<bool>(5, false));
  c["position_embedding_type"] = nullptr;
  EXPECT_EQ(architecture(c).layer_rope, std::vector<bool>(5, false));
  c["position_embedding_type"] = "alibi";
  expect_error([&] { architecture(c); }, {"position_embedding_type", "'alibi'"});
  c.erase("position_embedding_type");

  nlohmann::json hybrid = c;
  hybrid["layer_types"][2] = "mamba";
  expect_error([&] { architecture(hybrid); }, {"layer_types", "layer 2 is 'mamba'"});
  hybrid.erase("layer_types");  // transformers: every layer mamba
  expect_error([&] { architecture(hybrid); }, {"layer_types", "absent", "mamba"});
  hybrid = c;
  hybrid["layer_types"] = std::vector<std::string>(4, "attention");
  expect_error([&] { architecture(hybrid); }, {"layer_types", "one entry per layer (5)"});
  // With experts (GraniteMoeHybridConfig's default: 8), stacked, the shared_mlp beside them.
  nlohmann::json mixture = c;
  mixture.erase("num_local_experts");
  mixture["intermediate_size"] = 64;
  const Architecture m = architecture(mixture);
  EXPECT_EQ(m.experts, 8);
  EXPECT_EQ(m.experts_per_token, 2);
  EXPECT_EQ(m.expert_intermediate, 64);
  EXPECT_EQ(m.shared_expert_intermediate, 96);
  EXPECT_FALSE(m.shared_expert_gated);
  const LayerModules sparse = m.layer(0);
  ASSERT_EQ(sparse.experts.size(), 8u);
  EXPECT_EQ(sparse.mlp_input.at(0).name, "model.layers.0.shared_mlp.input_linear");
  EXPECT_EQ(sparse.experts[7].input.at(0).name, "model.layers.0.block_sparse_moe.input_linear");
  nlohmann::json no_mlp = c;
  no_mlp["shared_intermediate_size"] = 0;
  expect_error([&] { architecture(no_mlp); }, {"shared_intermediate_size", "not positive"});
  // Other families' num_local_experts are still refused where they run no experts.
  nlohmann::json llama = stories_config();
  llama["num_local_experts"] = 0;
  expect_error([&] { architecture(llama); }, {"num_local_experts", "mixture-of-experts"});
}

// Granite's mixtures (GraniteMoe, GraniteMoeShared): each block's experts stacked in two tensors,
// named as one module per expert with its index, the router as block_sparse_moe.router.layer,
// the top-k softmax renormalized, GraniteMoeShared's shared_mlp where its width is not 0.
TEST(Architecture, GraniteMixturesStackTheirExperts) {
  nlohmann::json c = stories_config();
  c["architectures"] = {"GraniteMoeForCausalLM"};
  c["model_type"] = "granitemoe";
  c["intermediate_size"] = 32;
  c["num_local_experts"] = 4;
  c["num_experts_per_tok"] = 2;
  c["residual_multiplier"] = 0.22;
  const Architecture a = architecture(c);
  EXPECT_EQ(a.experts, 4);
  EXPECT_EQ(a.expert_intermediate, 32);
  EXPECT_TRUE(a.routing.renormalize);
  EXPECT_EQ(a.residual_multiplier, 0.22f);
  const LayerModules l = a.layer(2);
  ASSERT_EQ(l.router.size(), 1u);
  EXPECT_EQ(l.router[0].name, "model.layers.2.block_sparse_moe.router.layer");
  ASSERT_EQ(l.experts.size(), 4u);
  for (int64_t e = 0; e < 4; ++e) {
    const ExpertModules& x = l.experts[static_cast<size_t>(e)];
    ASSERT_EQ(x.input.size(), 1u);  // gate and up rows in one tensor, gate first
    EXPECT_EQ(x.input[0].name, "model.layers.2.block_sparse_moe.input_linear");
    EXPECT_EQ(x.input[0].out_features, 64);
    EXPECT_EQ(x.input[0].stacked_experts, 4);
    EXPECT_EQ(x.input[0].expert, e);
    EXPECT_EQ(x.output.name, "model.layers.2.block_sparse_moe.output_linear");
    EXPECT_EQ(x.output.in_features, 32);
    EXPECT_EQ(x.output.expert, e);
  }
  EXPECT_TRUE(l.mlp_input.empty());
  // GraniteMoeConfig's defaults: 8 experts, 2 per token.
  c.erase("num_local_experts");
  c.erase("num_experts_per_tok");
  EXPECT_EQ(architecture(c).experts, 8);
  EXPECT_EQ(architecture(c).experts_per_token, 2);

  c["architectures"] = {"GraniteMoeSharedForCausalLM"};
  c["model_type"] = "granitemoeshared";
  c["shared_intermediate_size"] = 48;
  const LayerModules shared = architecture(c).layer(0);
  ASSERT_EQ(shared.mlp_input.size(), 1u);
  EXPECT_EQ(shared.mlp_input[0].name, "model.layers.0.shared_mlp.input_linear");
  EXPECT_EQ(shared.mlp_input[0].out_features, 96);
  EXPECT_EQ(shared.mlp_output.in_features, 48);
  c["shared_intermediate_size"] = 0;  // GraniteMoeSharedConfig's default: no shared MLP
  EXPECT_TRUE(architecture(c).layer(0).mlp_input.empty());
  c["num_local_experts"] = 0;
  expect_error([&] { architecture(c); }, {"num_local_experts", "between 1 and"});
}

// transformers 5's rope_parameters per layer type, on a family whose layers share one rope.
TEST(Architecture, RopeParametersPerLayerType) {
  nlohmann::json c = stories_config();
  c.erase("rope_theta");
  c["rope_parameters"] = {
      {"full_attention", {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 5e5}}},
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 5e5}}}};
  const Architecture a = architecture(c);
  EXPECT_EQ(a.rope, RopeVariant::linear);
  EXPECT_EQ(a.config.rope_theta, 5e5);
  c["rope_parameters"]["sliding_attention"]["rope_theta"] = 1e4;
  expect_error([&] { architecture(c); }, {"rope_local_base_freq", "Gemma 3 and OLMo 3 only"});
  c["rope_parameters"]["full_attention"]["mrope_section"] = {1, 2};
  expect_error([&] { architecture(c); }, {"rope_parameters.full_attention.mrope_section"});
}

// OLMo 2: no input norms, each sublayer's output normalized, q/k norms over whole projections.
TEST(Architecture, Olmo2PostNorms) {
  nlohmann::json c = stories_config();
  c["architectures"] = {"Olmo2ForCausalLM"};
  const Architecture a = architecture(c);
  EXPECT_TRUE(a.post_norms);
  EXPECT_FALSE(a.gemma);
  EXPECT_TRUE(a.qk_norm && a.qk_norm_whole);
  const LayerModules l = a.layer(2);
  EXPECT_TRUE(l.input_norm.empty());
  EXPECT_TRUE(l.pre_feedforward_norm.empty());
  EXPECT_EQ(l.post_attention_norm, "model.layers.2.post_attention_layernorm.weight");
  EXPECT_EQ(l.post_feedforward_norm, "model.layers.2.post_feedforward_layernorm.weight");
  EXPECT_EQ(l.q_norm, "model.layers.2.self_attn.q_norm.weight");
  EXPECT_FALSE(architecture(stories_config()).post_norms);
}

// OLMo 3: OLMo 2's layers, windows on all but every fourth (or as layer_types say, 4096 tokens
// unless the config says otherwise), the sliding layers' rope plain at rope_theta whatever
// scaling the full-attention layers have; transformers 5's rope_parameters per layer type the same.
TEST(Architecture, Olmo3WindowsAndSlidingRope) {
  nlohmann::json c = stories_config();  // 5 layers
  c["architectures"] = {"Olmo3ForCausalLM"};
  c["model_type"] = "olmo3";
  c["rope_scaling"] = {{"rope_type", "yarn"},
                       {"factor", 8.0},
                       {"original_max_position_embeddings", 64},
                       {"attention_factor", 1.2079441541679836}};
  Architecture a = architecture(c);
  EXPECT_TRUE(a.post_norms && a.qk_norm_whole && a.layer(1).input_norm.empty());
  EXPECT_EQ(a.layer_window, (std::vector<int64_t>{4096, 4096, 4096, 0, 4096}));
  EXPECT_EQ(a.rope, RopeVariant::yarn);
  EXPECT_EQ(a.local_rope_theta, c["rope_theta"].get<double>());
  EXPECT_TRUE(a.local_layer(0) && !a.local_layer(3));
  const std::vector<float> full = a.rope_inv_freq(), sliding = a.local_rope_inv_freq();
  EXPECT_EQ(sliding.front(), 1.0f);
  EXPECT_EQ(full.back(), sliding.back() / 8);  // interpolated on the full layers only
  c["sliding_window"] = 128;
  c["layer_types"] = {"full_attention", "sliding_attention", "full_attention", "sliding_attention",
                      "sliding_attention"};
  EXPECT_EQ(architecture(c).layer_window, (std::vector<int64_t>{0, 128, 0, 128, 128}));

  // transformers 5: the same model with rope_parameters per layer type; a sliding base of its own.
  nlohmann::json t5 = c;
  t5.erase("rope_scaling");
  t5.erase("rope_theta");
  t5["rope_parameters"] = {{"full_attention", c["rope_scaling"]},
                           {"sliding_attention", {{"rope_type", "default"}}}};
  t5["rope_parameters"]["full_attention"]["rope_theta"] = c["rope_theta"];
  t5["rope_parameters"]["sliding_attention"]["rope_theta"] = c["rope_theta"];
  a = architecture(t5);
  EXPECT_EQ(a.rope_inv_freq(), full);
  EXPECT_EQ(a.local_rope_inv_freq(), sliding);
  t5["rope_parameters"]["sliding_attention"]["rope_theta"] = 1e6;
  EXPECT_EQ(architecture(t5).local_rope_theta, 1e6);
  t5["rope_parameters"]["sliding_attention"]["rope_type"] = "linear";
  expect_error([&] { architecture(t5); }, {"rope_parameters.sliding_attention", "unscaled"});

  c["sliding_window"] = nullptr;  // transformers cannot mask the sliding layers then
  expect_error([&] { architecture(c); }, {"sliding_window", "need a window"});
  c["layer_types"] = std::vector<std::string>(5, "full_attention");
  EXPECT_EQ(architecture(c).layer_window, std::vector<int64_t>(5, 0));
  // OLMo 2 has no windows.
  c["architectures"] = {"Olmo2ForCausalLM"};
  c["sliding_window"] = 128;
  c["layer_types"][1] = "sliding_attention";
  expect_error([&] { architecture(c); }, {"layer_types", "OLMo 3 and EXAONE 4 only"});
}

// EXAONE 4: OLMo's post-norms with per-head q/k norms; windows from layer_types, else from
// sliding_window_pattern as a number or as letters (4096 tokens unless the config says otherwise);
// with a window only the sliding layers rotate, without one (null) every layer does.
TEST(Architecture, Exaone4WindowsAndNoPELayers) {
  nlohmann::json c = stories_config();  // 5 layers
  c["architectures"] = {"Exaone4ForCausalLM"};
  c["model_type"] = "exaone4";
  Architecture a = architecture(c);
  EXPECT_TRUE(a.post_norms && a.qk_norm && !a.qk_norm_whole);
  EXPECT_TRUE(a.layer(1).input_norm.empty());
  EXPECT_EQ(a.layer_window, (std::vector<int64_t>{4096, 4096, 4096, 0, 4096}));
  EXPECT_EQ(a.layer_rope, (std::vector<bool>{true, true, true, false, true}));
  c["sliding_window"] = 64;
  c["sliding_window_pattern"] = "LLG";
  a = architecture(c);
  EXPECT_EQ(a.layer_window, (std::vector<int64_t>{64, 64, 0, 64, 64}));
  EXPECT_EQ(a.layer_rope, (std::vector<bool>{true, true, false, true, true}));
  c["sliding_window_pattern"] = 2;
  EXPECT_EQ(architecture(c).layer_window, (std::vector<int64_t>{64, 0, 64, 0, 64}));
  c["layer_types"] = {"full_attention", "sliding_attention", "full_attention", "full_attention",
                      "sliding_attention"};
  a = architecture(c);
  EXPECT_EQ(a.layer_window, (std::vector<int64_t>{0, 64, 0, 0, 64}));
  EXPECT_EQ(a.layer_rope, (std::vector<bool>{false, true, false, false, true}));
  EXPECT_EQ(a.local_rope_theta, 0);  // one rope for every layer that rotates
  c["layer_types"] = std::vector<std::string>(5, "full_attention");
  c["sliding_window"] = nullptr;  // EXAONE 4.0 1.2B: no windows, every layer rotates
  a = architecture(c);
  EXPECT_EQ(a.layer_window, std::vector<int64_t>(5, 0));
  EXPECT_EQ(a.layer_rope, std::vector<bool>(5, true));
  c.erase("layer_types");
  EXPECT_EQ(architecture(c).layer_rope, std::vector<bool>(5, true));
  c["layer_types"] = {"sliding_attention", "full_attention", "full_attention", "full_attention",
                      "full_attention"};
  expect_error([&] { architecture(c); }, {"sliding_window", "need a window"});
  c.erase("layer_types");
  c["sliding_window"] = 64;
  c["sliding_window_pattern"] = "LLX";
  expect_error([&] { architecture(c); }, {"sliding_window_pattern", "letters L and G"});
  c["architectures"] = {"Gemma3ForCausalLM"};  // letters are EXAONE's alone
  c["sliding_window_pattern"] = "LLG";
  expect_error([&] { architecture(c); }, {"sliding_window_pattern", "integer"});
}

// Mistral 3: the text model of Mistral3ForConditionalGeneration (Mistral's or Ministral 3's, with
// transformers' defaults for what text_config leaves out), and Ministral 3's query scaling.
TEST(Architecture, Mistral3TextModels) {
  const nlohmann::json shapes = {{"hidden_size", 64},        {"intermediate_size", 128},
                                 {"num_hidden_layers", 2},   {"num_attention_heads", 4},
                                 {"num_key_value_heads", 2}, {"head_dim", 16},
                                 {"vocab_size", 512}};
  nlohmann::json text = shapes;
  text["model_type"] = "ministral3";
  nlohmann::json c = {{"architectures", {"Mistral3ForConditionalGeneration"}},
                      {"model_type", "mistral3"},
                      {"text_config", text}};
  Architecture a = architecture(c);
  EXPECT_EQ(a.prefix, "language_model.model.");
  ASSERT_TRUE(a.head.has_value());
  EXPECT_EQ(a.head->name, "language_model.lm_head");
  EXPECT_EQ(a.rope, RopeVariant::yarn);  // Ministral3Config's rope
  EXPECT_EQ(a.yarn.factor, 16);
  EXPECT_EQ(a.yarn.original_context, 16384);
  EXPECT_EQ(a.rope_attention_factor, 1.0f);  // mscale / mscale_all_dim
  EXPECT_EQ(a.query_scale_beta, 0.1);
  EXPECT_EQ(a.query_scale_context, 16384);
  EXPECT_EQ(a.context_length, 262144);
  EXPECT_EQ(a.config.rms_norm_eps, 1e-5);
  EXPECT_EQ(a.layer_window, std::vector<int64_t>(2, 0));

  text = shapes;  // Mistral Small 3.x: MistralConfig's defaults, its window on every layer
  c["text_config"] = text;
  a = architecture(c);
  EXPECT_EQ(a.config.model_type, "mistral");
  EXPECT_EQ(a.rope, RopeVariant::plain);
  EXPECT_EQ(a.query_scale_beta, 0);
  EXPECT_EQ(a.layer_window, std::vector<int64_t>(2, 4096));
  c["text_config"]["sliding_window"] = nullptr;
  EXPECT_EQ(architecture(c).layer_window, std::vector<int64_t>(2, 0));
  nlohmann::json plain = shapes;  // MistralForCausalLM's config: the same defaults
  plain["architectures"] = {"MistralForCausalLM"};
  plain["model_type"] = "mistral";
  EXPECT_EQ(architecture(plain).layer_window, std::vector<int64_t>(2, 4096));
  c["text_config"]["model_type"] = "mistral4";
  expect_error([&] { architecture(c); }, {"text_config.model_type", "'mistral4'"});
  c.erase("text_config");
  expect_error([&] { architecture(c); }, {"text_config", "needs a text_config object"});

  // Ministral 3's own class; the query scaling is Ministral 3's alone and needs its context.
  nlohmann::json m = shapes;
  m["architectures"] = {"Ministral3ForCausalLM"};
  m["model_type"] = "ministral3";
  m["rope_parameters"] = {
      {"rope_type", "yarn"}, {"factor", 4.0}, {"rope_theta", 1e6}, {"llama_4_scaling_beta", 0.5}};
  expect_error([&] { architecture(m); }, {"original_max_position_embeddings"});
  m["rope_parameters"]["original_max_position_embeddings"] = 64;
  EXPECT_EQ(architecture(m).query_scale_beta, 0.5);
  m["rope_parameters"]["llama_4_scaling_beta"] = 1e308;
  expect_error([&] { architecture(m); }, {"llama_4_scaling_beta", "range of a float"});
  m["rope_parameters"]["llama_4_scaling_beta"] = 0.5;
  m["architectures"] = {"MistralForCausalLM"};
  m["model_type"] = "mistral";
  expect_error([&] { architecture(m); }, {"llama_4_scaling_beta", "Ministral 3"});
}

// Ernie 4.5: Llama's modules with interleaved rope pairs; use_bias gives every linear module but
// the head a bias.
TEST(Architecture, Ernie45InterleavedRopeAndOneBiasSwitch) {
  nlohmann::json c = stories_config();
  c["architectures"] = {"Ernie4_5ForCausalLM"};
  c["model_type"] = "ernie4_5";
  c["use_bias"] = false;
  Architecture a = architecture(c);
  EXPECT_TRUE(a.rope_interleaved);
  EXPECT_FALSE(a.qkv_bias || a.o_bias);
  c["use_bias"] = true;
  a = architecture(c);
  const LayerModules l = a.layer(1);
  EXPECT_TRUE(l.attention_input[0].has_bias && l.attention_output.has_bias);
  EXPECT_TRUE(l.mlp_input[1].has_bias && l.mlp_output.has_bias);
  EXPECT_FALSE(architecture(stories_config()).rope_interleaved);
}

// GLM-4 (0414): Gemma's sandwich of norms under GLM's names (post_attention_layernorm is the MLP's
// input norm, as in Glm4DecoderLayer), half of each head rotated in interleaved pairs by
// Glm4Config's defaults, q/k/v biases but none on o_proj, gate_up_proj fused without biases.
TEST(Architecture, Glm4NormsRopeAndBiases) {
  nlohmann::json c = stories_config();  // head_dim 8
  c["architectures"] = {"Glm4ForCausalLM"};
  c["model_type"] = "glm4";
  c.erase("attention_bias");
  const Architecture a = architecture(c);
  EXPECT_TRUE(a.rope_interleaved && a.post_norms && !a.gemma);
  EXPECT_EQ(a.rotary_dim, 4);
  EXPECT_TRUE(a.qkv_bias);
  EXPECT_FALSE(a.o_bias);
  const LayerModules l = a.layer(1);
  EXPECT_EQ(l.input_norm, "model.layers.1.input_layernorm.weight");
  EXPECT_EQ(l.post_attention_norm, "model.layers.1.post_self_attn_layernorm.weight");
  EXPECT_EQ(l.pre_feedforward_norm, "model.layers.1.post_attention_layernorm.weight");
  EXPECT_EQ(l.post_feedforward_norm, "model.layers.1.post_mlp_layernorm.weight");
  ASSERT_EQ(l.mlp_input.size(), 1u);
  EXPECT_EQ(l.mlp_input[0].name, "model.layers.1.mlp.gate_up_proj");
  EXPECT_EQ(l.mlp_input[0].out_features, 2 * c["intermediate_size"].get<int64_t>());
  EXPECT_FALSE(l.mlp_input[0].has_bias || l.attention_output.has_bias);
  EXPECT_TRUE(l.attention_input[2].has_bias);
  c["partial_rotary_factor"] = 1.0;
  EXPECT_EQ(architecture(c).rotary_dim, 8);
  c.erase("partial_rotary_factor");  // transformers 5: inside rope_parameters
  c["rope_parameters"] = {
      {"rope_type", "default"}, {"rope_theta", 1e4}, {"partial_rotary_factor", 0.25}};
  EXPECT_EQ(architecture(c).rotary_dim, 2);
}

// SmolLM3: no_rope_layers' 1 means the layer rotates (the name notwithstanding), 0 that it is NoPE.
TEST(Architecture, SmolLM3NoPELayers) {
  nlohmann::json c = stories_config();  // 5 layers
  c["architectures"] = {"SmolLM3ForCausalLM"};
  c["no_rope_layers"] = {1, 0, 1, 1, 0};
  EXPECT_EQ(architecture(c).layer_rope, (std::vector<bool>{true, false, true, true, false}));
  c.erase("no_rope_layers");  // every no_rope_layer_interval-th layer, 4 by default
  EXPECT_EQ(architecture(c).layer_rope, (std::vector<bool>{true, true, true, false, true}));
  c["no_rope_layer_interval"] = 2;
  EXPECT_EQ(architecture(c).layer_rope, (std::vector<bool>{true, false, true, false, true}));
  c["no_rope_layers"] = {1, 1};
  expect_error([&] { architecture(c); }, {"no_rope_layers", "each of the 5 layers"});
  c["no_rope_layers"] = {1, 2, 1, 1, 1};
  expect_error([&] { architecture(c); }, {"no_rope_layers", "0 and 1"});
  c = stories_config();
  c["no_rope_layers"] = {1, 1, 1, 0, 1};
  expect_error([&] { architecture(c); }, {"no_rope_layers", "changes the forward pass"});
  EXPECT_EQ(architecture(stories_config()).layer_rope, std::vector<bool>(5, true));
}

// Qwen2.5's long-context setting (its model card's rope_scaling) on a 128-wide head.
nlohmann::json qwen_yarn_config() {
  nlohmann::json c = stories_config();
  c["head_dim"] = 128;
  c["rope_theta"] = 1000000.0;
  c["max_position_embeddings"] = 32768;
  c["rope_scaling"] = {
      {"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  return c;
}

TEST(Architecture, YarnFollowsTransformers) {
  nlohmann::json c = qwen_yarn_config();
  const Architecture a = architecture(c);
  // The frequency indices that turn 32 and 1 times over 32768 positions: 128 ln(32768 / (32 *
  // 2 pi)) / (2 ln 1e6) = 23.6 and 39.7, rounded out.
  EXPECT_EQ(a.yarn.low, 23);
  EXPECT_EQ(a.yarn.high, 40);
  EXPECT_EQ(a.rope_attention_factor, static_cast<float>(1 + 0.1 * std::log(4.0)));
  EXPECT_EQ(a.context_length, 4 * 32768);  // as vLLM's max_model_len
  c.erase("rope_scaling");
  const std::vector<float> plain = architecture(c).rope_inv_freq();
  const std::vector<float> inv = a.rope_inv_freq();
  ASSERT_EQ(inv.size(), 64u);
  for (size_t i = 0; i < inv.size(); ++i) {
    if (i <= 23) {
      EXPECT_EQ(inv[i], plain[i]) << i;  // extrapolated: as trained
    } else if (i >= 40) {
      EXPECT_EQ(inv[i], plain[i] / 4) << i;  // interpolated
    } else {
      const double ramp = (static_cast<double>(i) - 23) / (40 - 23);
      EXPECT_NEAR(inv[i], plain[i] * (1 - ramp) + plain[i] / 4 * ramp, 1e-6 * plain[i]) << i;
    }
  }
}

TEST(Architecture, YarnSettings) {
  nlohmann::json c = qwen_yarn_config();
  c["rope_scaling"]["attention_factor"] = 1.5;
  EXPECT_EQ(architecture(c).rope_attention_factor, 1.5f);
  // DeepSeek's form: the ratio of the two terms; both needed (mscale_all_dim 0 means none).
  c["rope_scaling"].erase("attention_factor");
  c["rope_scaling"]["mscale"] = 2.0;
  c["rope_scaling"]["mscale_all_dim"] = 1.0;
  const double ln4 = std::log(4.0);
  EXPECT_EQ(architecture(c).rope_attention_factor,
            static_cast<float>((0.2 * ln4 + 1) / (0.1 * ln4 + 1)));
  c["rope_scaling"]["mscale_all_dim"] = 0.0;
  EXPECT_EQ(architecture(c).rope_attention_factor, static_cast<float>(0.1 * ln4 + 1));
  // No factor: the ratio of the contexts (transformers 5).
  c = qwen_yarn_config();
  c["rope_scaling"].erase("factor");
  c["max_position_embeddings"] = 65536;
  EXPECT_EQ(architecture(c).yarn.factor, 2.0);
  EXPECT_EQ(architecture(c).context_length, 65536);
  // Other rotation counts, and the bounds not rounded (gpt-oss's truncate: false).
  c = qwen_yarn_config();
  c["rope_scaling"]["beta_fast"] = 0.1;
  c["rope_scaling"]["beta_slow"] = 0.05;
  c["rope_scaling"]["truncate"] = false;
  const Architecture a = architecture(c);
  const auto index_of = [](double rotations) {
    return 128 * std::log(32768 / (rotations * 2 * M_PI)) / (2 * std::log(1e6));
  };
  EXPECT_NEAR(a.yarn.low, index_of(0.1), 1e-9);
  EXPECT_NEAR(a.yarn.high, index_of(0.05), 1e-9);
  EXPECT_GT(a.yarn.low, 50);

  for (const auto& [key, value, message] :
       {std::tuple{"factor", nlohmann::json(-1.0), "rope_scaling.factor"},
        {"beta_fast", nlohmann::json(0.0), "beta_fast"},
        {"mscale", nlohmann::json(-1.0), "mscale"},
        {"truncate", nlohmann::json("no"), "truncate"},
        {"attention_factor", nlohmann::json(0.0), "attention_factor"},
        {"beta_slow", nlohmann::json(1e308), "rope_scaling.beta_slow"},
        {"original_max_position_embeddings", nlohmann::json(-1),
         "rope_scaling.original_max_position_embeddings"},
        {"extrapolation_factor", nlohmann::json(1.0), "rope_scaling.extrapolation_factor"}}) {
    c = qwen_yarn_config();
    c["rope_scaling"][key] = value;
    expect_error([&] { architecture(c); }, {message});
  }
  c = qwen_yarn_config();
  c["rope_theta"] = 1.0;
  expect_error([&] { architecture(c); }, {"rope_theta"});
}

}  // namespace
}  // namespace dq4
