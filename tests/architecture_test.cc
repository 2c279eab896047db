// Architectures from config.json: names, fusion groups, biases, q/k norms, windows, rope, and
// what is refused.

#include "dq4/model/architecture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

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
  c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expect_error([&] { architecture(c); }, {"rope_scaling.rope_type", "yarn"});
  c = stories_config();
  c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"beta_fast", 32}};
  expect_error([&] { architecture(c); }, {"rope_scaling.beta_fast"});
  c = stories_config();
  c["hidden_act"] = "gelu";
  expect_error([&] { architecture(c); }, {"hidden_act", "gelu"});
  c = stories_config();
  c["final_logit_softcapping"] = 30.0;
  expect_error([&] { architecture(c); }, {"final_logit_softcapping"});
  c = stories_config();
  c["architectures"] = {"Qwen2ForCausalLM"};
  c["use_sliding_window"] = true;
  c["sliding_window"] = 4096;
  expect_error([&] { architecture(c); }, {"use_sliding_window"});
  c = stories_config();
  c["partial_rotary_factor"] = 0.5;
  expect_error([&] { architecture(c); }, {"partial_rotary_factor"});
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
  const std::vector<float> linear = architecture(c).rope_inv_freq();
  EXPECT_NEAR(linear[1], 1.0 / std::pow(500000.0, 2.0 / 64) / 4, 1e-7);
}

}  // namespace
}  // namespace dq4
