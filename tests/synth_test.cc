// The streaming writers (safetensors files, sharded checkpoints) and synthetic models.

#include "dq4/synth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dq4/checkpoint.h"
#include "dq4/checkpoint_writer.h"
#include "dq4/model_config.h"
#include "dq4/safetensors.h"
#include "dq4/safetensors_writer.h"
#include "expect_error.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

namespace fs = std::filesystem;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

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
  const std::string bytes = read_bytes(path);
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
      nlohmann::json::parse(read_bytes(dir.file("model.safetensors.index.json")));
  EXPECT_EQ(index["metadata"]["total_size"], 120);
  EXPECT_EQ(index["weight_map"]["x"], "model-00001-of-00002.safetensors");
  EXPECT_EQ(index["weight_map"]["z"], "model-00002-of-00002.safetensors");
  const Checkpoint c = Checkpoint::open_dir(dir.path());
  EXPECT_EQ(c.names(), (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(c.tensor("y").data[59], 7);
}

TEST(Synth, TinyPresetIsALlamaModelWithTheExpectedValues) {
  ScratchDir scratch;
  SynthOptions o = synth_preset("tiny");
  o.output_dir = scratch.file("tiny");
  o.seed = 3;
  const SynthReport r = write_synthetic_model(o);
  EXPECT_EQ(r.shards, 1u);
  EXPECT_FALSE(fs::exists(o.output_dir + "/tokenizer.json"));  // none unless asked for

  const ModelConfig config = ModelConfig::read(o.output_dir);
  EXPECT_EQ(config.hidden_size, 96);
  EXPECT_EQ(config.intermediate_size, 200);
  EXPECT_EQ(config.head_dim, 24);
  EXPECT_FALSE(config.tie_word_embeddings);
  EXPECT_EQ(config.torch_dtype, "bfloat16");

  const Checkpoint c = Checkpoint::open_dir(o.output_dir);
  EXPECT_EQ(c.names().size(),
            2u + 2 * 2 + 2 * 7 + 1);  // embed, norm, 2 norms + 7 linears a layer, lm_head
  for (const LinearModule& m : linear_modules(config))
    EXPECT_EQ(c.tensor(m.name + ".weight").shape,
              (std::vector<int64_t>{m.out_features, m.in_features}));
  const auto norm = c.tensor("model.layers.1.input_layernorm.weight").as<uint16_t>(Dtype::BF16);
  for (uint16_t v : norm) EXPECT_EQ(v, 0x3f80);  // 1.0

  const TensorView& w = c.tensor("model.layers.0.mlp.down_proj.weight");
  const auto bits = w.as<uint16_t>(Dtype::BF16);
  double sum = 0, squares = 0;
  for (size_t i = 0; i < bits.size(); ++i) {
    uint32_t f32_bits = uint32_t{bits[i]} << 16;
    float v;
    std::memcpy(&v, &f32_bits, 4);
    if (i < 10) {
      EXPECT_NEAR(v, synthetic_value(3, w.name, i), 0.004 * std::fabs(v) + 1e-6);
    }
    sum += v;
    squares += double{v} * v;
  }
  const double mean = sum / bits.size(), std = std::sqrt(squares / bits.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.001);
  EXPECT_NEAR(std, 0.02, 0.001);
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
  expect_error([] { (void)synth_preset("llama-70b"); }, {"llama-70b", "llama-1b, tiny"});
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
  EXPECT_FALSE(fs::exists(scratch.file("m")));
}

}  // namespace
}  // namespace dq4::test
