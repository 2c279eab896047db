// Mixtures of experts: the router's choice (softmax, top-k, ties, renormalization), the config
// fields, the experts' grouped W4A8 run against each expert's Linear alone, a batch whose rows
// share experts against each sequence alone (bit for bit), the pool jobs of a sparse layer and
// the cost of a token. Tiny synthetic models written by dq4 synth (F32).

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "dq4/convert/quantize.h"
#include "dq4/convert/synth.h"
#include "dq4/io/checkpoint.h"
#include "dq4/io/linear_tensors.h"
#include "dq4/io/quant_config.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/layers/experts.h"
#include "dq4/model/architecture.h"
#include "dq4/model/kv_cache.h"
#include "dq4/model/model.h"
#include "expect_error.h"
#include "model_batch.h"
#include "routing.h"
#include "safetensors_writer.h"

namespace dq4 {
namespace {

using test::ScratchDir;

std::string synth(const ScratchDir& scratch, const std::string& preset,
                  std::vector<int64_t> mlp_only_layers = {}) {
  SynthOptions o = synth_preset(preset);
  o.dtype = Dtype::F32;
  o.config.mlp_only_layers = std::move(mlp_only_layers);
  o.output_dir = scratch.file(preset);
  write_synthetic_model(o);
  return o.output_dir;
}

TEST(Routing, SoftmaxThenTopKThenRenormalization) {
  const float logits[] = {0.5f, 2.0f, -1.0f, 1.0f};
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l));
  for (const bool renormalize : {false, true}) {
    float p[4];
    std::memcpy(p, logits, sizeof p);
    int32_t chosen[2];
    float weights[2];
    model::route_token(p, 4, 2, {.renormalize = renormalize}, nullptr, chosen, weights);
    EXPECT_EQ(chosen[0], 1);
    EXPECT_EQ(chosen[1], 3);
    const double kept = renormalize ? std::exp(2.0) + std::exp(1.0) : sum;
    EXPECT_NEAR(weights[0], std::exp(2.0) / kept, 1e-6);
    EXPECT_NEAR(weights[1], std::exp(1.0) / kept, 1e-6);
  }
}

// torch.topk leaves ties unspecified; dq4 takes the lower expert, as torch.topk does in its
// deterministic mode.
TEST(Routing, TiesGoToTheLowerExpert) {
  float p[] = {1, 3, 3, 0, 3};
  int32_t chosen[3];
  float weights[3];
  model::route_token(p, 5, 3, {}, nullptr, chosen, weights);
  EXPECT_EQ(std::vector<int32_t>(chosen, chosen + 3), (std::vector<int32_t>{1, 2, 4}));
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_EQ(weights[1], weights[2]);

  float flat[] = {0, 0, 0, 0};
  model::route_token(flat, 4, 2, {.renormalize = true}, nullptr, chosen, weights);
  EXPECT_EQ(chosen[0], 0);
  EXPECT_EQ(chosen[1], 1);
  EXPECT_EQ(weights[0], 0.5f);
  EXPECT_EQ(weights[1], 0.5f);
}

// A Qwen3-MoE config.json with `extra` fields added (or replaced).
Architecture qwen3_moe(const std::string& extra) {
  std::string json = R"({"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256, "num_experts": 8,
    "num_experts_per_tok": 2, "moe_intermediate_size": 32, "router_aux_loss_coef": 0.001,
    "output_router_logits": false)";
  json += extra + "}";
  return Architecture::from_config(ModelConfig::parse(json, "config.json"), "config.json");
}

TEST(MoeConfig, SparseLayersFollowDecoderSparseStepAndMlpOnlyLayers) {
  const Architecture a = qwen3_moe(R"(, "decoder_sparse_step": 2, "mlp_only_layers": [3])");
  EXPECT_FALSE(a.sparse_layer(0));
  EXPECT_TRUE(a.sparse_layer(1));
  EXPECT_FALSE(a.sparse_layer(2));
  EXPECT_FALSE(a.sparse_layer(3));  // (3 + 1) % 2 == 0, but kept dense
  const LayerModules dense = a.layer(0), sparse = a.layer(1);
  EXPECT_TRUE(dense.experts.empty());
  EXPECT_EQ(dense.mlp_input.at(0).out_features, 128);
  ASSERT_EQ(sparse.experts.size(), 8u);
  EXPECT_TRUE(sparse.mlp_input.empty());
  ASSERT_EQ(sparse.router.size(), 1u);
  EXPECT_EQ(sparse.router[0].name, "model.layers.1.mlp.gate");
  EXPECT_EQ(sparse.experts[7].input[1].name, "model.layers.1.mlp.experts.7.up_proj");
  EXPECT_EQ(sparse.experts[7].output.in_features, 32);
  EXPECT_FALSE(a.routing.renormalize);  // transformers' default
}

TEST(MoeConfig, RefusesWhatItDoesNotRunNamingTheField) {
  test::expect_error([] { qwen3_moe(R"(, "num_experts_per_tok": 9)"); },
                     {"config.json", "num_experts_per_tok"});
  test::expect_error([] { qwen3_moe(R"(, "moe_intermediate_size": 0)"); },
                     {"config.json", "moe_intermediate_size"});
  test::expect_error([] { qwen3_moe(R"(, "num_experts": 0)"); }, {"config.json", "num_experts"});
  test::expect_error([] { qwen3_moe(R"(, "decoder_sparse_step": 0)"); },
                     {"config.json", "decoder_sparse_step"});
  test::expect_error([] { qwen3_moe(R"(, "mlp_only_layers": "all")"); },
                     {"config.json", "mlp_only_layers"});
  // A dense architecture with experts, OLMoE's clipped q/k/v, Qwen2-MoE without its shared expert.
  const auto parse = [](const std::string& json) {
    Architecture::from_config(ModelConfig::parse(json, "config.json"), "config.json");
  };
  const std::string shapes = R"("hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 256)";
  test::expect_error(
      [&] {
        parse(R"({"architectures": ["LlamaForCausalLM"], "num_experts": 8, )" + shapes + "}");
      },
      {"config.json", "num_experts"});
  test::expect_error(
      [&] {
        parse(R"({"architectures": ["OlmoeForCausalLM"], "num_experts": 8,
          "num_experts_per_tok": 2, "clip_qkv": 8.0, )" +
              shapes + "}");
      },
      {"config.json", "clip_qkv"});
  test::expect_error(
      [&] {
        parse(R"({"architectures": ["Qwen2MoeForCausalLM"], "num_experts": 8,
          "num_experts_per_tok": 2, "moe_intermediate_size": 32, )" +
              shapes + "}");
      },
      {"config.json", "shared_expert_intermediate_size"});
  test::expect_error(
      [&] {
        parse(R"({"architectures": ["MixtralForCausalLM"], "num_experts_per_tok": 2, )" + shapes +
              "}");
      },
      {"config.json", "num_local_experts"});
}

// W4A8 experts run grouped (each input row quantized once, copied to the rows of its experts) give
// what each expert's Linear gives for that row alone, bit for bit.
TEST(Experts, GroupedW4A8EqualsEachExpertAlone) {
  ScratchDir scratch;
  const std::string dir = synth(scratch, "tiny-qwen3-moe");
  const Architecture arch = Architecture::read(dir);
  const Checkpoint ckpt = Checkpoint::open_dir(dir);
  const QuantizationConfig quant = QuantizationConfig::read(dir);
  LinearOptions options;
  options.quantize_dense_group = 32;
  std::vector<std::vector<LinearModule>> inputs;
  for (const ExpertModules& e : arch.layer(0).experts) inputs.push_back(e.input);
  const Experts experts = Experts::load(ckpt, quant, inputs, options);
  ASSERT_NE(experts.description().find("W4A8"), std::string::npos) << experts.description();

  const int64_t rows = 5, k = experts.in_features(), n = experts.out_features();
  std::vector<float> x(static_cast<size_t>(rows * k));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  // Rows 0..4 routed to experts {e0, e1}: experts 1 and 6 shared by several rows, 0 unused.
  const std::vector<std::pair<int, int>> routes = {{1, 6}, {6, 2}, {1, 3}, {7, 6}, {1, 2}};
  std::vector<int64_t> offsets(static_cast<size_t>(experts.count()) + 1, 0);
  for (const auto& [a, b] : routes) ++offsets[a + 1], ++offsets[b + 1];
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  std::vector<int64_t> fill(offsets.begin(), offsets.end() - 1);
  std::vector<int32_t> source(static_cast<size_t>(offsets.back()));
  std::vector<std::pair<int64_t, int64_t>> grouped_of;  // (row, expert) of each grouped row
  grouped_of.resize(source.size());
  for (int32_t r = 0; r < rows; ++r)
    for (const int e : {routes[r].first, routes[r].second}) {
      const int64_t g = fill[e]++;
      source[g] = r;
      grouped_of[g] = {r, e};
    }
  std::vector<float> y(source.size() * static_cast<size_t>(n));
  ThreadPool pool(3);
  experts.forward(x.data(), rows, k, {offsets, source.data()}, y.data(), n, &pool);
  std::vector<float> alone(static_cast<size_t>(n));
  for (size_t g = 0; g < source.size(); ++g) {
    const auto [r, e] = grouped_of[g];
    experts.expert(e).forward(x.data() + r * k, 1, k, alone.data(), n, &pool);
    EXPECT_EQ(std::memcmp(alone.data(), y.data() + g * n, alone.size() * sizeof(float)), 0)
        << "row " << r << ", expert " << e;
  }
}

// Each sequence's logits (prompt rows, then one decode token at a time): every sequence alone, or
// all of them in each forward (the prompts together, then the decode steps together).
std::vector<float> run(Model& model, ThreadPool& pool, bool together) {
  constexpr int64_t kSequences = 4, kPrompt = 6, kDecode = 3, kBlock = 4;
  const int64_t vocab = model.vocab_size(), length = kPrompt + kDecode;
  const int64_t blocks = (length + kBlock - 1) / kBlock;
  std::vector<std::vector<int32_t>> tokens, tables;
  for (int64_t s = 0; s < kSequences; ++s) {
    std::vector<int32_t> t;
    for (int64_t i = 0; i < length; ++i)
      t.push_back(static_cast<int32_t>((s * 101 + i * 37 + 5) % vocab));
    tokens.push_back(t);
    std::vector<int32_t> table(static_cast<size_t>(blocks));
    std::iota(table.begin(), table.end(), static_cast<int32_t>(s * blocks));
    tables.push_back(table);
  }
  KvCache cache(model.kv_shape(kSequences * blocks, kBlock));
  std::vector<std::vector<float>> out(kSequences);
  std::vector<float> logits;
  const auto step = [&](const std::vector<int64_t>& which, int64_t start, int64_t count) {
    std::vector<SequenceInput> batch;
    for (int64_t s : which)
      batch.push_back(
          {std::span(tokens[s]).subspan(static_cast<size_t>(start), static_cast<size_t>(count)),
           start, tables[s], SequenceInput::Logits::all});
    logits.resize(static_cast<size_t>(Model::logit_rows(batch) * vocab));
    model.forward(batch, cache, logits.data(), &pool);
    for (size_t b = 0; b < which.size(); ++b)
      out[which[b]].insert(out[which[b]].end(), logits.begin() + b * count * vocab,
                           logits.begin() + (b + 1) * count * vocab);
  };
  if (together) {
    step({0, 1, 2, 3}, 0, kPrompt);
    for (int64_t i = kPrompt; i < length; ++i) step({0, 1, 2, 3}, i, 1);
  } else {
    for (int64_t s = 0; s < kSequences; ++s) {
      step({s}, 0, kPrompt);
      for (int64_t i = kPrompt; i < length; ++i) step({s}, i, 1);
    }
  }
  std::vector<float> all;
  for (const auto& o : out) all.insert(all.end(), o.begin(), o.end());
  return all;
}

struct BatchCase {
  const char* preset;
  std::optional<int64_t> quantize_group;
};

class MoeBatch : public ::testing::TestWithParam<BatchCase> {};

// 24 prompt rows choosing 2 of 8 experts in each layer: the experts are shared between rows of
// different sequences, and each row's result is still its own.
TEST_P(MoeBatch, EqualsEachSequenceAloneBitForBit) {
  ScratchDir scratch;
  ModelOptions options;
  options.quantize_group = GetParam().quantize_group;
  const std::unique_ptr<Model> model = Model::load(synth(scratch, GetParam().preset), options);
  ThreadPool one(1), three(3);
  const std::vector<float> reference = run(*model, one, false);
  for (ThreadPool* pool : {&one, &three}) {
    const std::vector<float> alone = run(*model, *pool, false);
    const std::vector<float> batched = run(*model, *pool, true);
    ASSERT_EQ(batched.size(), reference.size());
    EXPECT_EQ(std::memcmp(alone.data(), reference.data(), reference.size() * sizeof(float)), 0)
        << pool->size() << " threads, alone";
    EXPECT_EQ(std::memcmp(batched.data(), reference.data(), reference.size() * sizeof(float)), 0)
        << pool->size() << " threads, batched";
  }
}

INSTANTIATE_TEST_SUITE_P(
    TinyMixtures, MoeBatch,
    ::testing::Values(BatchCase{"tiny-qwen3-moe", std::nullopt}, BatchCase{"tiny-qwen3-moe", 32},
                      BatchCase{"tiny-qwen2-moe", 0}, BatchCase{"tiny-olmoe", 32},
                      BatchCase{"tiny-ernie4_5-moe", 32}, BatchCase{"tiny-glm4-moe", 32}),
    [](const auto& info) {
      std::string name = info.param.preset;
      std::erase_if(name, [](char c) { return c == '-' || c == '_'; });
      if (!info.param.quantize_group) return name + "F32";
      return name + "W4A8G" + std::to_string(*info.param.quantize_group);
    });

// Qwen3-MoE with layer 0 kept dense (mlp_only_layers): a dense MLP, then a sparse layer.
TEST(MoeBatch, DenseLayerBeforeASparseOne) {
  ScratchDir scratch;
  ModelOptions options;
  options.quantize_group = 32;
  const std::unique_ptr<Model> model = Model::load(synth(scratch, "tiny-qwen3-moe", {0}), options);
  const std::vector<std::string> lines = model->describe();
  const auto has = [&](const std::string& start) {
    for (const std::string& line : lines)
      if (line.starts_with(start)) return true;
    return false;
  };
  EXPECT_TRUE(has("mlp input: ")) << testing::PrintToString(lines);
  EXPECT_TRUE(has("experts input: ")) << testing::PrintToString(lines);
  ThreadPool pool(2);
  const std::vector<float> alone = run(*model, pool, false), batched = run(*model, pool, true);
  EXPECT_EQ(std::memcmp(alone.data(), batched.data(), alone.size() * sizeof(float)), 0);
}

// A sparse layer is six pool jobs (attention's three, the router, the experts' gate/up and down),
// eight with Qwen2-MoE's shared expert; the head one more.
TEST(MoePoolJobs, SixPerSparseLayerEightWithASharedExpert) {
  ScratchDir scratch;
  for (const auto& [preset, per_layer] :
       {std::pair<const char*, uint64_t>{"tiny-qwen3-moe", 6}, {"tiny-qwen2-moe", 8}}) {
    SCOPED_TRACE(preset);
    ModelOptions options;
    options.quantize_group = 32;
    const std::unique_ptr<Model> model = Model::load(synth(scratch, preset), options);
    const uint64_t budget =
        per_layer * static_cast<uint64_t>(model->config().num_hidden_layers) + 1;  // + the head
    ThreadPool pool(3);
    test::BatchRunner runner(*model, 5, 9, 2, pool);
    uint64_t before = pool.jobs();
    runner.prefill();
    EXPECT_LE(pool.jobs() - before, budget) << "prefill";
    before = pool.jobs();
    runner.decode_step();
    EXPECT_LE(pool.jobs() - before, budget) << "decode step";
  }
}

// A token reads and multiplies by the experts it is routed to only.
TEST(MoeCost, CountsTheRoutedExperts) {
  ScratchDir scratch;
  const std::unique_ptr<Model> model = Model::load(synth(scratch, "tiny-qwen3-moe"));
  const ModelConfig& c = model->config();
  const int64_t h = c.hidden_size, q = c.num_attention_heads * c.head_dim,
                kv = c.num_key_value_heads * c.head_dim;
  const int64_t per_layer = h * (q + 2 * kv) + q * h + h * c.num_experts +
                            c.num_experts_per_tok * 3 * h * c.moe_intermediate_size;
  const int64_t head = c.tie_word_embeddings ? h * c.vocab_size : h * c.vocab_size;
  EXPECT_EQ(model->cost_per_token().linear_ops, 2 * (per_layer * c.num_hidden_layers + head));
  EXPECT_LT(model->cost_per_token().weight_bytes, model->load_report().packed_bytes);
}

// `dq4 quantize` of a mixture (W4A8, group 32) into scratch/name.
std::string quantize(const ScratchDir& scratch, const std::string& in, const std::string& name) {
  QuantizeOptions q;
  q.input_dir = in;
  q.modules = Architecture::read(in).linear_modules();
  q.output_dir = scratch.file(name);
  quantize_checkpoint(q);
  return q.output_dir;
}

bool has_line(const std::vector<std::string>& lines, const std::string& start,
              const std::string& part) {
  for (const std::string& line : lines)
    if (line.starts_with(start) && line.find(part) != std::string::npos) return true;
  return false;
}

// Every expert quantized under its own module name; the router and the shared-expert gate left
// dense by default (llm-compressor's MoE recipes ignore them), named in the ignore list.
TEST(MoeCheckpoint, QuantizeLeavesTheRoutersDenseAndLoads) {
  ScratchDir scratch;
  const std::string dir = quantize(scratch, synth(scratch, "tiny-qwen2-moe"), "q");
  const Checkpoint ckpt = Checkpoint::open_dir(dir);
  EXPECT_NE(ckpt.find("model.layers.1.mlp.experts.7.down_proj.weight_scale"), nullptr);
  EXPECT_NE(ckpt.find("model.layers.0.mlp.shared_expert.up_proj.weight_scale"), nullptr);
  for (const char* router : {"model.layers.0.mlp.gate", "model.layers.1.mlp.shared_expert_gate"}) {
    EXPECT_EQ(ckpt.find(std::string(router) + ".weight_scale"), nullptr) << router;
    EXPECT_EQ(ckpt.tensor(std::string(router) + ".weight").dtype, Dtype::F32) << router;
  }
  const QuantizationConfig quant = QuantizationConfig::read(dir);
  EXPECT_EQ(quant.ignore(), (std::vector<std::string>{"lm_head", "re:.*mlp.gate$",
                                                      "re:.*mlp.shared_expert_gate$"}));
  const std::vector<std::string> lines = Model::load(dir)->describe();
  EXPECT_TRUE(has_line(lines, "router: ", "dense F32")) << testing::PrintToString(lines);
  EXPECT_TRUE(has_line(lines, "experts input: ", "W4A8 g32")) << testing::PrintToString(lines);
  EXPECT_TRUE(has_line(lines, "shared expert output: ", "W4A8 g32"))
      << testing::PrintToString(lines);
}

// A config as llm-compressor writes one for a mixture: the ignore list naming every layer's
// router, and per-module schemes (the experts W4A8 by regex, the other linears W4A16 by class).
TEST(MoeCheckpoint, LoadsPerModuleSchemesAndRoutersIgnoredByName) {
  ScratchDir scratch;
  const std::string dir = quantize(scratch, synth(scratch, "tiny-qwen2-moe"), "q");
  nlohmann::json config = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  nlohmann::json& q = config["quantization_config"];
  q["ignore"] = {"lm_head"};
  for (int layer = 0; layer < 2; ++layer)
    for (const char* router : {"mlp.gate", "mlp.shared_expert_gate"})
      q["ignore"].push_back("model.layers." + std::to_string(layer) + "." + router);
  nlohmann::json w4a8 = q["config_groups"]["group_0"], w4a16 = w4a8;
  w4a8["targets"] = {"re:.*mlp\\.experts\\..*"};
  w4a16["input_activations"] = nullptr;
  q["config_groups"] = {{"group_0", w4a8}, {"group_1", w4a16}};
  std::ofstream(dir + "/config.json") << config.dump(2);

  const std::unique_ptr<Model> model = Model::load(dir);
  const std::vector<std::string> lines = model->describe();
  const std::string all = testing::PrintToString(lines);
  EXPECT_TRUE(has_line(lines, "attention input: ", "W4A16 g32")) << all;
  EXPECT_TRUE(has_line(lines, "router: ", "dense F32")) << all;
  EXPECT_TRUE(has_line(lines, "experts input: ", "W4A8 g32")) << all;
  EXPECT_TRUE(has_line(lines, "experts output: ", "W4A8 g32")) << all;
  EXPECT_TRUE(has_line(lines, "shared expert input: ", "W4A16 g32")) << all;
  // And it runs: finite logits.
  KvCache cache(model->kv_shape(1, 16));
  const int32_t tokens[] = {5, 17, 42};
  const int32_t table[] = {0};
  const SequenceInput input{tokens, 0, table, SequenceInput::Logits::last};
  std::vector<float> logits(static_cast<size_t>(model->vocab_size()));
  model->forward(std::span(&input, 1), cache, logits.data());
  for (float l : logits) ASSERT_TRUE(std::isfinite(l));
}

// Granite's stacked experts quantized as llm-compressor saves them ([experts, N, K / 8] words,
// [experts, N, groups] scales, weight_shape [experts, N, K]), its router left dense; the model
// loaded from them computes what the unquantized one does with the same int4 values: each
// expert's slice is that expert's weights.
TEST(MoeCheckpoint, StackedExpertsQuantizeAndLoadBySlice) {
  ScratchDir scratch;
  const std::string in = synth(scratch, "tiny-granitemoe-shared");
  QuantizeOptions q;
  q.input_dir = in;
  q.modules = Architecture::read(in).linear_modules();
  q.output_dir = scratch.file("q");
  q.format = WeightFormat::pack_quantized;
  quantize_checkpoint(q);
  const std::string dir = q.output_dir;
  const Checkpoint ckpt = Checkpoint::open_dir(dir);
  const std::string moe = "model.layers.1.block_sparse_moe.";
  EXPECT_EQ(ckpt.tensor(moe + "input_linear.weight_packed").shape,
            (std::vector<int64_t>{8, 128, 12}));
  EXPECT_EQ(ckpt.tensor(moe + "input_linear.weight_scale").shape,
            (std::vector<int64_t>{8, 128, 3}));
  const auto shape = ckpt.tensor(moe + "output_linear.weight_shape").as<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(shape.begin(), shape.end()), (std::vector<int64_t>{8, 96, 64}));
  EXPECT_EQ(ckpt.tensor(moe + "router.layer.weight").dtype, Dtype::F32);
  EXPECT_EQ(ckpt.find(moe + "router.layer.weight_scale"), nullptr);
  EXPECT_NE(ckpt.find("model.layers.1.shared_mlp.input_linear.weight_packed"), nullptr);

  // Expert 5's slice: its own rows of the stacked words and scales.
  const QuantizationConfig quant = QuantizationConfig::read(dir);
  const LinearModule five{moe + "output_linear", 96, 64, false, 8, 5};
  const LinearTensors t = find_linear_tensors(ckpt, five, quant.resolve(five.name));
  EXPECT_EQ(t.n, 96);
  EXPECT_EQ(t.k, 64);
  const TensorView& words = ckpt.tensor(moe + "output_linear.weight_packed");
  EXPECT_EQ(t.weight_packed->data, words.data + 5 * words.bytes / 8);
  EXPECT_EQ(t.weight_scale->shape, (std::vector<int64_t>{96, 2}));
  const std::vector<std::string> lines = Model::load(dir)->describe();
  EXPECT_TRUE(has_line(lines, "experts input: ", "8 experts, each W4A8 g32"))
      << testing::PrintToString(lines);
  EXPECT_TRUE(has_line(lines, "router: ", "dense F32")) << testing::PrintToString(lines);

  // A leading dimension other than the config's count, and an expert past it, are refused.
  const LinearModule nine{moe + "output_linear", 96, 64, false, 9, 0};
  test::expect_error([&] { find_linear_tensors(ckpt, nine, quant.resolve(nine.name)); },
                     {moe + "output_linear", "expected 9 stacked experts"});
  const LinearModule past{moe + "output_linear", 96, 64, false, 8, 8};
  test::expect_error([&] { find_linear_tensors(ckpt, past, quant.resolve(past.name)); },
                     {"expert 8 of 8"});
  nlohmann::json config = nlohmann::json::parse(std::ifstream(in + "/config.json"));
  config["num_local_experts"] = 6;
  std::ofstream(in + "/config.json") << config.dump(2);
  test::expect_error([&] { Model::load(in); },
                     {"config.json", "num_local_experts", "6 experts", "[8, 96, 64]"});
}

// A config counting more experts or layers than the checkpoint holds is refused naming the field,
// before any per-expert or per-layer names or settings are made (a billion of them would not
// fit in memory; more experts than any router runs are refused outright); fewer layers too, rather
// than run the first ones alone.
TEST(MoeCheckpoint, RefusesCountsTheCheckpointDoesNotHold) {
  ScratchDir scratch;
  for (const char* preset : {"tiny-qwen3-moe", "tiny-mixtral"}) {
    const std::string dir = synth(scratch, preset);
    const nlohmann::json original = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
    const std::string experts_field =
        original.contains("num_local_experts") ? "num_local_experts" : "num_experts";
    const auto refused = [&](const std::string& field, int64_t count, const std::string& missing) {
      nlohmann::json config = original;
      config[field] = count;
      std::ofstream(dir + "/config.json") << config.dump(2);
      test::expect_error([&] { Model::load(dir); }, {"config.json", field, missing});
      test::expect_error([&] { Architecture::read(dir); }, {"config.json", field, missing});
    };
    refused(experts_field, 1000, "experts.999.");
    refused(experts_field, 1'000'000'000, "between 1 and 1024");
    refused("num_hidden_layers", 1'000'000'000, "layers.999999999.");
    nlohmann::json fewer = original;
    fewer["num_hidden_layers"] = 1;
    fewer.erase("layer_types");
    std::ofstream(dir + "/config.json") << fewer.dump(2);
    test::expect_error([&] { Model::load(dir); },
                       {"config.json", "num_hidden_layers", "also holds model.layers.1.*"});
  }
}

}  // namespace
}  // namespace dq4
