// The routers that choose by score plus a selection bias: Ernie 4.5 MoE (softmax, a least
// divisor) and GLM-4 MoE (sigmoid, expert groups, a scale); their configs' own names and
// transformers' defaults, the sparse layers' range, the shared experts, and the selection bias
// as the checkpoint holds it (or not). Their forward passes against llama.cpp are in
// llamacpp_differential_tests (tiny-ernie4_5-moe, tiny-glm4-moe).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dq4/convert/synth.h"
#include "dq4/io/checkpoint.h"
#include "dq4/model/architecture.h"
#include "dq4/model/kv_cache.h"
#include "dq4/model/model.h"
#include "expect_error.h"
#include "routing.h"
#include "safetensors_writer.h"

namespace dq4 {
namespace {

using test::ScratchDir;

// The bias moves expert 2 ahead of expert 0 for the choice; the weights are the probabilities.
TEST(Routing, SelectionBiasChoosesButDoesNotWeight) {
  const float logits[] = {1.0f, 2.0f, 0.8f, -1.0f};
  const float bias[] = {0.0f, 0.0f, 0.1f, 0.0f};
  float p[4];
  std::memcpy(p, logits, sizeof p);
  int32_t chosen[2];
  float weights[2];
  model::route_token(p, 4, 2, {.renormalize = true}, bias, chosen, weights);
  EXPECT_EQ(chosen[0], 1);
  EXPECT_EQ(chosen[1], 2);
  const double kept = std::exp(2.0) + std::exp(0.8);
  EXPECT_NEAR(weights[0], std::exp(2.0) / kept, 1e-6);
  EXPECT_NEAR(weights[1], std::exp(0.8) / kept, 1e-6);

  // A bias large enough picks an expert of negligible probability; its weight stays negligible.
  const float pull[] = {0.0f, 0.0f, 0.0f, 1.0f};
  std::memcpy(p, logits, sizeof p);
  model::route_token(p, 4, 2, {}, pull, chosen, weights);
  EXPECT_EQ(chosen[0], 3);
  EXPECT_EQ(chosen[1], 1);
  EXPECT_LT(weights[0], 0.05f);
}

// Renormalization divides by the chosen probabilities' sum, or by norm_min where that is larger.
TEST(Routing, NormMinIsTheLeastDivisor) {
  const float logits[] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (const float norm_min : {0.0f, 0.25f, 0.75f}) {
    float p[4];
    std::memcpy(p, logits, sizeof p);
    int32_t chosen[2];
    float weights[2];
    model::route_token(p, 4, 2, {.renormalize = true, .norm_min = norm_min}, nullptr, chosen,
                       weights);
    const float divisor = std::max(0.5f, norm_min);
    EXPECT_EQ(weights[0], 0.25f / divisor) << norm_min;
    EXPECT_EQ(weights[1], 0.25f / divisor) << norm_min;
  }
}

// GLM-4 MoE: sigmoid scores; the group of experts 4-7 has the higher sum of its two best biased
// scores, so the choice is made there alone, although expert 0 scores highest; the weights are
// the unbiased scores over their sum (plus 1e-20), times the scale.
TEST(Routing, SigmoidScoresFromTheBestGroupScaled) {
  const float logits[] = {3.0f, -2.0f, -2.0f, -2.0f, 1.0f, 0.5f, 0.0f, 0.2f};
  const float bias[] = {0, 0, 0, 0, 0, 0, 0.3f, 0};
  const ExpertRouting rule{.sigmoid = true,
                           .renormalize = true,
                           .norm_epsilon = 1e-20f,
                           .scale = 2.5f,
                           .groups = 2,
                           .groups_used = 1};
  float p[8];
  std::memcpy(p, logits, sizeof p);
  int32_t chosen[2];
  float weights[2];
  model::route_token(p, 8, 2, rule, bias, chosen, weights);
  EXPECT_EQ(chosen[0], 6);  // 0.5 + 0.3
  EXPECT_EQ(chosen[1], 4);
  const auto sigmoid = [](double x) { return 1 / (1 + std::exp(-x)); };
  const double sum = sigmoid(0.0) + sigmoid(1.0);
  EXPECT_NEAR(weights[0], 2.5 * sigmoid(0.0) / sum, 1e-6);
  EXPECT_NEAR(weights[1], 2.5 * sigmoid(1.0) / sum, 1e-6);
  // Without groups expert 0 comes first.
  std::memcpy(p, logits, sizeof p);
  model::route_token(p, 8, 2, {.sigmoid = true}, bias, chosen, weights);
  EXPECT_EQ(chosen[0], 0);
  EXPECT_EQ(chosen[1], 6);
  EXPECT_NEAR(weights[0], sigmoid(3.0), 1e-6);
}

// transformers gives the experts of the groups not chosen a score of 0, not minus infinity: where
// the chosen group's biased scores are negative, its experts lose to them.
TEST(Routing, ExpertsOfOtherGroupsScoreZero) {
  const float logits[] = {0, 0, 0, 0, 0, 0, 0, 0};
  const float bias[] = {-0.6f, -0.7f, -0.9f, -0.9f, -0.8f, -0.8f, -0.9f, -0.9f};
  float p[8];
  std::memcpy(p, logits, sizeof p);
  int32_t chosen[2];
  float weights[2];
  model::route_token(p, 8, 2, {.sigmoid = true, .groups = 2, .groups_used = 1}, bias, chosen,
                     weights);
  EXPECT_EQ(chosen[0], 4);  // the first of group 1's experts, at 0
  EXPECT_EQ(chosen[1], 5);
}

// A small config of `architecture` with `layers` layers and the `extra` fields.
Architecture small(const std::string& architecture, const std::string& model_type, int layers,
                   const std::string& extra) {
  const std::string json = R"({"architectures": [")" + architecture + R"("], "model_type": ")" +
                           model_type + R"(", "hidden_size": 64, "intermediate_size": 256,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 256,
    "num_hidden_layers": )" +
                           std::to_string(layers) + extra + "}";
  return Architecture::from_config(ModelConfig::parse(json, "config.json"), "config.json");
}

Architecture ernie_moe(const std::string& extra) {
  return small("Ernie4_5_MoeForCausalLM", "ernie4_5_moe", 6, extra);
}

// The released configs' fields, and transformers' Ernie4_5_MoeConfig defaults for those left out.
TEST(ErnieMoeConfig, TransformersDefaultsAndTheReleasedNames) {
  const Architecture d = ernie_moe("");
  EXPECT_EQ(d.experts, 64);
  EXPECT_EQ(d.experts_per_token, 6);
  EXPECT_EQ(d.expert_intermediate, 1536);
  EXPECT_EQ(d.shared_expert_intermediate, 2 * 1536);
  EXPECT_FALSE(d.shared_expert_gated);
  EXPECT_TRUE(d.routing.renormalize);
  EXPECT_EQ(d.routing.norm_min, 1e-12f);
  EXPECT_FALSE(d.routing.bias_required);
  EXPECT_EQ(d.config.rope_theta, 500000.0);
  EXPECT_EQ(d.config.rms_norm_eps, 1e-5);
  EXPECT_TRUE(d.config.tie_word_embeddings);
  EXPECT_TRUE(d.rope_interleaved);
  EXPECT_FALSE(d.sparse_layer(0));
  for (int64_t i = 1; i < 6; ++i) EXPECT_TRUE(d.sparse_layer(i)) << i;

  const Architecture a = ernie_moe(R"(, "moe_num_experts": 8, "moe_k": 2,
    "moe_intermediate_size": 32, "moe_num_shared_experts": 3, "moe_layer_start_index": 1,
    "moe_layer_end_index": 4, "moe_layer_interval": 2, "moe_norm_min": 0.5,
    "moe_use_aux_free": true, "moe_gate": "topk", "moe_capacity": [8, 8, 8])");
  EXPECT_EQ(a.experts, 8);
  EXPECT_EQ(a.experts_per_token, 2);
  EXPECT_EQ(a.routing.norm_min, 0.5f);
  EXPECT_TRUE(a.routing.bias_required);
  // Every second layer from 1 to 4.
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(a.sparse_layer(i), i == 1 || i == 3) << i;
  const LayerModules dense = a.layer(2), sparse = a.layer(3);
  EXPECT_TRUE(dense.experts.empty());
  EXPECT_TRUE(dense.router_bias.empty());
  EXPECT_EQ(dense.mlp_input.at(0).name, "model.layers.2.mlp.gate_proj");
  EXPECT_EQ(dense.mlp_input.at(0).out_features, 256);
  ASSERT_EQ(sparse.experts.size(), 8u);
  EXPECT_EQ(sparse.experts[7].output.name, "model.layers.3.mlp.experts.7.down_proj");
  EXPECT_EQ(sparse.experts[7].output.in_features, 32);
  ASSERT_EQ(sparse.router.size(), 1u);  // no shared-expert gate
  EXPECT_EQ(sparse.router[0].name, "model.layers.3.mlp.gate");
  EXPECT_EQ(sparse.router_bias, "model.layers.3.mlp.moe_statics.e_score_correction_bias");
  EXPECT_EQ(sparse.mlp_input.at(1).name, "model.layers.3.mlp.shared_experts.up_proj");
  EXPECT_EQ(sparse.mlp_input.at(1).out_features, 3 * 32);
  EXPECT_EQ(sparse.mlp_output.in_features, 3 * 32);

  // transformers maps the usual names onto Ernie's and sets them last.
  const Architecture aliased = ernie_moe(R"(, "moe_num_experts": 8, "num_experts": 4,
    "num_experts_per_tok": 3)");
  EXPECT_EQ(aliased.experts, 4);
  EXPECT_EQ(aliased.experts_per_token, 3);
  // No shared experts: no shared MLP in the sparse layers.
  EXPECT_TRUE(ernie_moe(R"(, "moe_num_shared_experts": 0)").layer(1).mlp_input.empty());
}

TEST(ErnieMoeConfig, RefusesWhatItDoesNotRunNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"(, "moe_num_experts": 0)", "moe_num_experts"},
      {R"(, "moe_num_experts": 4, "moe_k": 5)", "moe_k"},
      {R"(, "moe_intermediate_size": 0)", "moe_intermediate_size"},
      {R"(, "moe_layer_interval": 0)", "moe_layer_interval"},
      {R"(, "moe_layer_start_index": -1)", "moe_layer_start_index"},
      {R"(, "moe_layer_end_index": -2)", "moe_layer_end_index"},
      {R"(, "moe_num_shared_experts": -1)", "moe_num_shared_experts"},
      {R"(, "moe_num_shared_experts": 4000000000)", "moe_num_shared_experts"},
      {R"(, "moe_norm_min": -1)", "moe_norm_min"},
      {R"(, "moe_norm_min": 1e300)", "moe_norm_min"},
      {R"(, "moe_layer_start_index": [1, 1])", "moe_layer_start_index"},
      {R"(, "use_bias": true)", "use_bias"},
      {R"(, "hidden_act": "gelu")", "hidden_act"}};
  for (const auto& [extra, field] : cases)
    test::expect_error([&] { ernie_moe(extra); }, {"config.json", field});
}

// The tiny preset (F32) in scratch/name, its checkpoint's tensors passed through `edit` (which
// may drop one by returning false) with `added` after them, its config's fields through
// `config_edit`.
std::string tiny_edited(const ScratchDir& scratch, const std::string& preset,
                        const std::string& name, const std::function<bool(test::TestTensor&)>& edit,
                        const std::function<void(nlohmann::json&)>& config_edit = nullptr,
                        const std::vector<test::TestTensor>& added = {}) {
  SynthOptions o = synth_preset(preset);
  o.dtype = Dtype::F32;
  o.output_dir = scratch.file(name);
  write_synthetic_model(o);
  std::vector<test::TestTensor> tensors;
  {
    const Checkpoint ckpt = Checkpoint::open_dir(o.output_dir);
    for (const std::string& n : ckpt.names()) {
      const TensorView& t = ckpt.tensor(n);
      test::TestTensor copy{n, "F32", t.shape, {t.data, t.data + t.bytes}};
      if (edit(copy)) tensors.push_back(std::move(copy));
    }
  }
  tensors.insert(tensors.end(), added.begin(), added.end());
  test::write_safetensors(o.output_dir + "/model.safetensors", tensors);
  if (config_edit) {
    nlohmann::json config = nlohmann::json::parse(std::ifstream(o.output_dir + "/config.json"));
    config_edit(config);
    std::ofstream(o.output_dir + "/config.json") << config.dump(2);
  }
  return o.output_dir;
}

std::string tiny_ernie_moe(const ScratchDir& scratch, const std::string& name,
                           const std::function<bool(test::TestTensor&)>& edit,
                           const std::function<void(nlohmann::json&)>& config_edit = nullptr) {
  return tiny_edited(scratch, "tiny-ernie4_5-moe", name, edit, config_edit);
}

std::vector<float> last_logits(Model& model) {
  KvCache cache(model.kv_shape(1, 16));
  const int32_t tokens[] = {5, 17, 42, 7, 99};
  const int32_t table[] = {0};
  const SequenceInput input{tokens, 0, table, SequenceInput::Logits::last};
  std::vector<float> logits(static_cast<size_t>(model.vocab_size()));
  model.forward(std::span(&input, 1), cache, logits.data());
  return logits;
}

bool is_bias(const test::TestTensor& t) {
  return t.name.ends_with("moe_statics.e_score_correction_bias");
}

// Trained with the bias (moe_use_aux_free), the checkpoint must hold it; without, an absent one is
// none (transformers would start it at zero), the same logits as zeros. Its shape, [1, experts] or
// [experts], and its values are checked.
TEST(ErnieMoeCheckpoint, SelectionBiasRequiredOnlyWithAuxFreeRouting) {
  ScratchDir scratch;
  const auto keep = [](test::TestTensor&) { return true; };
  const std::vector<float> with_bias =
      last_logits(*Model::load(tiny_ernie_moe(scratch, "a", keep)));

  const auto drop = [](test::TestTensor& t) { return !is_bias(t); };
  test::expect_error(
      [&] { Model::load(tiny_ernie_moe(scratch, "b", drop)); },
      {"model.layers.1.mlp.moe_statics.e_score_correction_bias", "missing", "moe_use_aux_free"});
  const auto no_aux_free = [](nlohmann::json& c) { c["moe_use_aux_free"] = false; };
  const std::vector<float> absent =
      last_logits(*Model::load(tiny_ernie_moe(scratch, "c", drop, no_aux_free)));
  const auto zero = [](test::TestTensor& t) {
    if (is_bias(t)) std::fill(t.data.begin(), t.data.end(), 0);
    return true;
  };
  const std::vector<float> zeros = last_logits(*Model::load(tiny_ernie_moe(scratch, "d", zero)));
  EXPECT_EQ(absent, zeros);
  EXPECT_NE(absent, with_bias);  // the tiny model's bias changes some choices

  const auto flat = [](test::TestTensor& t) {
    if (is_bias(t)) t.shape = {t.shape[1]};
    return true;
  };
  EXPECT_EQ(last_logits(*Model::load(tiny_ernie_moe(scratch, "e", flat))), with_bias);
  const auto wide = [](test::TestTensor& t) {
    if (is_bias(t)) t.shape = {2, t.shape[1] / 2};
    return true;
  };
  test::expect_error([&] { Model::load(tiny_ernie_moe(scratch, "f", wide)); },
                     {"e_score_correction_bias", "expected shape [8] or [1, 8]"});
  const auto nan = [](test::TestTensor& t) {
    if (is_bias(t)) {
      const float v = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(t.data.data() + 4, &v, 4);
    }
    return true;
  };
  test::expect_error([&] { Model::load(tiny_ernie_moe(scratch, "g", nan)); },
                     {"e_score_correction_bias", "finite"});
}

Architecture glm4_moe(const std::string& extra) {
  return small("Glm4MoeForCausalLM", "glm4_moe", 4, extra);
}

// GLM-4.5's config names, and Glm4MoeConfig's defaults for those left out.
TEST(Glm4MoeConfig, TransformersDefaultsAndTheReleasedNames) {
  const Architecture d = glm4_moe("");
  EXPECT_EQ(d.experts, 128);
  EXPECT_EQ(d.experts_per_token, 8);
  EXPECT_EQ(d.expert_intermediate, 1408);
  EXPECT_EQ(d.shared_expert_intermediate, 1408);
  EXPECT_FALSE(d.shared_expert_gated);
  EXPECT_TRUE(d.routing.sigmoid);
  EXPECT_TRUE(d.routing.renormalize);
  EXPECT_EQ(d.routing.scale, 1.0f);
  EXPECT_EQ(d.routing.groups, 1);
  EXPECT_TRUE(d.routing.bias_required);
  EXPECT_EQ(d.rotary_dim, 16);  // half of each head, in rotate-half pairs
  EXPECT_FALSE(d.rope_interleaved);
  EXPECT_FALSE(d.qk_norm);
  EXPECT_FALSE(d.post_norms);
  EXPECT_FALSE(d.sparse_layer(0));
  EXPECT_TRUE(d.sparse_layer(3));

  const Architecture a = glm4_moe(R"(, "n_routed_experts": 16, "num_experts_per_tok": 4,
    "moe_intermediate_size": 32, "n_shared_experts": 2, "first_k_dense_replace": 2,
    "n_group": 4, "topk_group": 2, "routed_scaling_factor": 2.5, "norm_topk_prob": false,
    "use_qk_norm": true, "attention_bias": true, "num_nextn_predict_layers": 1)");
  EXPECT_EQ(a.experts, 16);
  EXPECT_EQ(a.routing.groups, 4);
  EXPECT_EQ(a.routing.groups_used, 2);
  EXPECT_EQ(a.routing.scale, 2.5f);
  EXPECT_FALSE(a.routing.renormalize);
  EXPECT_TRUE(a.qk_norm);
  EXPECT_FALSE(a.qk_norm_whole);
  EXPECT_TRUE(a.qkv_bias);
  EXPECT_FALSE(a.o_bias);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(a.sparse_layer(i), i >= 2) << i;
  const LayerModules sparse = a.layer(2);
  EXPECT_EQ(sparse.q_norm, "model.layers.2.self_attn.q_norm.weight");
  EXPECT_EQ(sparse.router_bias, "model.layers.2.mlp.gate.e_score_correction_bias");
  ASSERT_EQ(sparse.router.size(), 1u);
  EXPECT_EQ(sparse.mlp_input.at(0).name, "model.layers.2.mlp.shared_experts.gate_proj");
  EXPECT_EQ(sparse.mlp_input.at(0).out_features, 64);
  EXPECT_EQ(sparse.experts.at(15).input.at(0).in_features, 64);
  EXPECT_EQ(a.layer(1).mlp_input.at(0).out_features, 256);
}

TEST(Glm4MoeConfig, RefusesWhatItDoesNotRunNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"(, "n_routed_experts": 0)", "n_routed_experts"},
      {R"(, "n_routed_experts": 2048)", "n_routed_experts"},
      {R"(, "n_routed_experts": 8, "num_experts_per_tok": 9)", "num_experts_per_tok"},
      {R"(, "n_group": 3)", "n_group"},
      {R"(, "n_group": 0)", "n_group"},
      {R"(, "n_routed_experts": 8, "n_group": 8)", "n_group"},
      {R"(, "n_group": 4, "topk_group": 5)", "topk_group"},
      {R"(, "n_routed_experts": 16, "n_group": 4, "topk_group": 1)", "num_experts_per_tok"},
      {R"(, "routed_scaling_factor": 0)", "routed_scaling_factor"},
      {R"(, "routed_scaling_factor": 1e300)", "routed_scaling_factor"},
      {R"(, "n_shared_experts": -1)", "n_shared_experts"},
      {R"(, "first_k_dense_replace": -1)", "first_k_dense_replace"},
      {R"(, "partial_rotary_factor": 1.5)", "partial_rotary_factor"}};
  for (const auto& [extra, field] : cases)
    test::expect_error([&] { glm4_moe(extra); }, {"config.json", field});
  // use_qk_norm is GLM-4 MoE's own.
  test::expect_error(
      [] {
        Architecture::from_config(
            ModelConfig::parse(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
              "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4,
              "vocab_size": 256, "use_qk_norm": true})",
                               "config.json"),
            "config.json");
      },
      {"config.json", "use_qk_norm"});
}

// GLM-4.5's checkpoints hold their multi-token-prediction layer after the decoder's: read past
// when the config counts it, refused when it does not; the selection bias must be there.
TEST(Glm4MoeCheckpoint, PredictionLayersAfterTheDecoderAndTheSelectionBias) {
  ScratchDir scratch;
  const std::string preset = "tiny-glm4-moe";
  const auto keep = [](test::TestTensor&) { return true; };
  const std::vector<float> reference =
      last_logits(*Model::load(tiny_edited(scratch, preset, "a", keep)));
  const std::vector<test::TestTensor> mtp = {
      {"model.layers.3.eh_proj.weight", "F32", {2, 2}, std::vector<uint8_t>(16)}};
  test::expect_error([&] { Model::load(tiny_edited(scratch, preset, "b", keep, nullptr, mtp)); },
                     {"config.json", "num_hidden_layers", "model.layers.3."});
  const auto one_more = [](nlohmann::json& c) { c["num_nextn_predict_layers"] = 1; };
  EXPECT_EQ(last_logits(*Model::load(tiny_edited(scratch, preset, "c", keep, one_more, mtp))),
            reference);
  const auto drop = [](test::TestTensor& t) {
    return t.name != "model.layers.2.mlp.gate.e_score_correction_bias";
  };
  test::expect_error([&] { Model::load(tiny_edited(scratch, preset, "d", drop)); },
                     {"model.layers.2.mlp.gate.e_score_correction_bias", "missing"});
}

}  // namespace
}  // namespace dq4
