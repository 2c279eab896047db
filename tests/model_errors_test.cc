// What the model refuses, and how: every error names the file, tensor or field at fault.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "dq4/architecture.h"
#include "dq4/model.h"
#include "dq4/session.h"
#include "expect_error.h"
#include "safetensors_writer.h"

namespace dq4 {
namespace {

using test::expect_error;
namespace fs = std::filesystem;

nlohmann::json stories_config() {
  std::ifstream in(test::fixtures_dir() + "/stories260K-hf/config.json");
  return nlohmann::json::parse(in);
}

Architecture architecture(const nlohmann::json& config) {
  return Architecture::from_config(ModelConfig::parse(config.dump(), "config.json"), "config.json");
}

// A model directory with the stories260K weights and the given config.json.
struct ModifiedModel {
  test::ScratchDir dir;
  explicit ModifiedModel(const nlohmann::json& config) {
    fs::copy_file(test::fixtures_dir() + "/stories260K-hf/model.safetensors",
                  dir.file("model.safetensors"));
    test::write_file(dir.file("config.json"), config.dump());
  }
};

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

TEST(ModelErrors, BadFilesAndShapes) {
  expect_error([] { Model::load("/nonexistent/model"); }, {"/nonexistent/model", "config.json"});
  nlohmann::json c = stories_config();
  c["hidden_size"] = 80;
  c["head_dim"] = 10;
  {
    ModifiedModel m(c);
    expect_error([&] { Model::load(m.dir.path()); }, {"model.embed_tokens.weight", "[512, 80]"});
  }
  c = stories_config();
  c["tie_word_embeddings"] = false;
  {
    ModifiedModel m(c);
    expect_error([&] { Model::load(m.dir.path()); }, {"lm_head"});
  }
  c = stories_config();
  c["attention_bias"] = true;
  {
    ModifiedModel m(c);
    expect_error([&] { Model::load(m.dir.path()); }, {"q_proj", "bias"});
  }
}

TEST(ModelErrors, BadBatches) {
  std::unique_ptr<Model> model = Model::load(test::fixtures_dir() + "/stories260K-hf");
  Session session(*model, 8);
  const std::vector<int32_t> outside = {1, 512};
  expect_error([&] { session.feed(outside); }, {"token id 512", "vocabulary"});
  const std::vector<int32_t> long_prompt(9, 1);
  expect_error([&] { session.feed(long_prompt); }, {"9 tokens", "context of 8"});
  KvCache cache(model->kv_shape(1, 4));
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5};
  const std::vector<int32_t> table = {0};
  SequenceInput seq{tokens, 0, table, SequenceInput::Logits::last};
  std::vector<float> logits(512);
  expect_error([&] { model->forward(std::span(&seq, 1), cache, logits.data()); },
               {"block table", "too short"});
  const std::vector<int32_t> bad_table = {0, 7};
  seq.block_table = bad_table;
  expect_error([&] { model->forward(std::span(&seq, 1), cache, logits.data()); },
               {"block 7", "outside the cache"});
  seq.start = 510;
  seq.block_table = table;
  expect_error([&] { model->forward(std::span(&seq, 1), cache, logits.data()); },
               {"exceed the context of 512"});
}

}  // namespace
}  // namespace dq4
