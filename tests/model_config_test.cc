// config.json -> ModelConfig, and the linear modules of a Llama-family model.

#include "dq4/model_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "expect_error.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

TEST(ModelConfig, Stories260KFixture) {
  const ModelConfig c = ModelConfig::read(fixtures_dir() + "/stories260K-hf");
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 172);
  EXPECT_EQ(c.num_hidden_layers, 5);
  EXPECT_EQ(c.num_attention_heads, 8);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.torch_dtype, "float32");

  const auto modules = linear_modules(c);
  ASSERT_EQ(modules.size(), 35u);  // 7 per layer, the head is the tied embedding
  EXPECT_EQ(modules[1].name, "model.layers.0.self_attn.k_proj");
  EXPECT_EQ(modules[1].out_features, 32);
  EXPECT_EQ(modules[1].in_features, 64);
  EXPECT_EQ(modules[6].name, "model.layers.0.mlp.down_proj");
  EXPECT_EQ(modules[6].out_features, 64);
  EXPECT_EQ(modules[6].in_features, 172);
}

nlohmann::json small_config() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"hidden_size", 64},
          {"intermediate_size", 128},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"vocab_size", 100}};
}

TEST(ModelConfig, DefaultsAndUntiedHead) {
  const ModelConfig c = ModelConfig::parse(small_config().dump(), "config.json");
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_FALSE(c.tie_word_embeddings);
  const auto modules = linear_modules(c);
  ASSERT_EQ(modules.size(), 15u);
  EXPECT_EQ(modules.back().name, "lm_head");
  EXPECT_EQ(modules.back().out_features, 100);
}

TEST(ModelConfig, LinearGroupsShareAnInput) {
  const ModelConfig c = ModelConfig::parse(small_config().dump(), "config.json");
  const auto groups = linear_groups(c);
  ASSERT_EQ(groups.size(), 2u * 4 + 1);
  EXPECT_EQ(groups[0].size(), 3u);
  EXPECT_EQ(groups[0][2].name, "model.layers.0.self_attn.v_proj");
  EXPECT_EQ(groups[2][1].name, "model.layers.0.mlp.up_proj");
  EXPECT_EQ(groups[7][0].name, "model.layers.1.mlp.down_proj");
  EXPECT_EQ(groups.back()[0].name, "lm_head");
  for (const auto& group : groups)
    for (const auto& m : group) EXPECT_EQ(m.in_features, group[0].in_features) << m.name;
}

TEST(ModelConfig, Qwen2HasQkvBiasOnly) {
  nlohmann::json j = small_config();
  j["architectures"] = {"Qwen2ForCausalLM"};
  const auto modules = linear_modules(ModelConfig::parse(j.dump(), "config.json"));
  EXPECT_TRUE(modules[0].has_bias);
  EXPECT_TRUE(modules[2].has_bias);
  EXPECT_FALSE(modules[3].has_bias);  // o_proj
  EXPECT_FALSE(modules[4].has_bias);
}

TEST(ModelConfig, WholeFloatsAreIntegers) {
  nlohmann::json j = small_config();
  j["hidden_size"] = 64.0;  // some Python exporters write integers as floats
  EXPECT_EQ(ModelConfig::parse(j.dump(), "config.json").hidden_size, 64);
}

TEST(ModelConfig, ErrorsNameTheField) {
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* fragment;
  };
  const Case cases[] = {
      {"architectures", {"GPT2LMHeadModel"}, "'GPT2LMHeadModel' is not supported"},
      {"architectures", "LlamaForCausalLM", "architectures"},
      {"hidden_size", nullptr, "hidden_size: missing"},
      {"hidden_size", "64", "hidden_size: expected an integer"},
      {"hidden_size", 64.5, "hidden_size: expected an integer"},
      // Found by the quant_config fuzzer: converting 6.7e98 to an integer was undefined.
      {"hidden_size", 6.66667e98, "hidden_size: expected an integer"},
      {"hidden_size", 18446744073709551615ull, "hidden_size: expected an integer"},
      {"num_attention_heads", 0, "num_attention_heads: must be positive"},
      {"num_key_value_heads", 3, "does not divide"},
      {"rms_norm_eps", -1.0, "rms_norm_eps"},
      {"tie_word_embeddings", "yes", "tie_word_embeddings: expected true or false"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key);
    nlohmann::json j = small_config();
    j[c.key] = c.value;
    expect_error([&] { ModelConfig::parse(j.dump(), "dir/config.json"); },
                 {"dir/config.json", c.fragment});
  }
}

}  // namespace
}  // namespace dq4::test
