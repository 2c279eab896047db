// quantize_checkpoint end to end: the W4A16 fixture reproduced byte for byte, W4A8 / W4A16 round
// trips through the checkpoint readers (int-quantized and pack-quantized, channelwise and
// groupwise with a partial last group, F32 / BF16 / F16), atomic output, sharded input and output.

#include "dq4/convert/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "dq4/convert/synth.h"
#include "dq4/io/checkpoint.h"
#include "dq4/io/linear_tensors.h"
#include "dq4/io/model_config.h"
#include "dq4/io/quant_config.h"
#include "dq4/io/safetensors_writer.h"
#include "dq4/kernels/int4_codec.h"
#include "dq4/model/architecture.h"
#include "dq4/quant/rtn.h"
#include "expect_error.h"
#include "fixtures.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot open " << path;
  return nlohmann::json::parse(in);
}

std::string bytes_of(const TensorView& t) {
  return {reinterpret_cast<const char*>(t.data), t.bytes};
}

// A synthetic model in a scratch directory.
std::string synth(const ScratchDir& scratch, const std::string& name, Dtype dtype,
                  uint64_t max_shard_bytes = kDefaultMaxShardBytes) {
  SynthOptions o = synth_preset("tiny");
  o.output_dir = scratch.file(name);
  o.dtype = dtype;
  o.seed = 7;
  o.max_shard_bytes = max_shard_bytes;
  write_synthetic_model(o);
  return o.output_dir;
}

QuantizeOptions options_for(const std::string& in, const std::string& out, int64_t group_size,
                            bool w4a8, WeightFormat format) {
  QuantizeOptions o;
  o.input_dir = in;
  o.modules = Architecture::read(in).linear_modules();
  o.output_dir = out;
  o.group_size = group_size;
  o.quantize_activations = w4a8;
  o.format = format;
  return o;
}

// Every module of the output, read back through the checkpoint readers, holds exactly what RTN
// computes from the input; ignored modules and every other tensor are unchanged.
void expect_round_trip(const QuantizeOptions& o, const std::set<std::string>& ignored) {
  const Checkpoint in = Checkpoint::open_dir(o.input_dir);
  const Checkpoint out = Checkpoint::open_dir(o.output_dir);
  const QuantizationConfig config = QuantizationConfig::read(o.output_dir);
  ASSERT_TRUE(config.quantized());
  std::set<std::string> linear_weights;
  for (const LinearModule& m : o.modules) {
    SCOPED_TRACE(m.name);
    const TensorView& weight = in.tensor(m.name + ".weight");
    linear_weights.insert(weight.name);
    const LinearScheme scheme = config.resolve(m.name);
    if (ignored.count(m.name)) {
      EXPECT_EQ(scheme.kind, LinearKind::dense);
      EXPECT_EQ(bytes_of(out.tensor(weight.name)), bytes_of(weight));
      continue;
    }
    EXPECT_EQ(scheme.kind, o.quantize_activations ? LinearKind::w4a8 : LinearKind::w4a16);
    EXPECT_EQ(scheme.format, o.format);
    EXPECT_EQ(scheme.group_size, o.group_size);
    const LinearTensors t = find_linear_tensors(out, m.name, scheme);
    const RtnResult expected = rtn_quantize(weight, o.group_size);
    std::vector<int8_t> values(expected.values.size());
    if (o.format == WeightFormat::int_quantized) {
      ASSERT_NE(t.weight, nullptr);
      ASSERT_EQ(t.weight->dtype, Dtype::I8);
      std::memcpy(values.data(), t.weight->data, values.size());
    } else {
      ASSERT_NE(t.weight_packed, nullptr);
      unpack_int4_rows(t.weight_packed->as<int32_t>().data(), t.n, t.k, values.data());
      const TensorView& shape = out.tensor(m.name + ".weight_shape");
      EXPECT_EQ(shape.dtype, Dtype::I64);
      EXPECT_EQ(std::vector<int64_t>(shape.as<int64_t>().begin(), shape.as<int64_t>().end()),
                (std::vector<int64_t>{m.out_features, m.in_features}));
    }
    EXPECT_EQ(values, expected.values);
    ASSERT_NE(t.weight_scale, nullptr);
    EXPECT_EQ(t.weight_scale->dtype, weight.dtype);
    EXPECT_EQ(t.weight_scale->shape, (std::vector<int64_t>{expected.rows, expected.groups}));
    EXPECT_EQ(bytes_of(*t.weight_scale),
              std::string(expected.scales.begin(), expected.scales.end()));
  }
  for (const std::string& name : in.names()) {
    if (!linear_weights.count(name)) {
      EXPECT_EQ(bytes_of(out.tensor(name)), bytes_of(in.tensor(name))) << name;
    }
  }
}

// The fixture's tensors laid out as the safetensors library (and dq4) writes them: the fixture
// itself keeps them in name order, which the library never produces.
std::string fixture_in_library_order(const Checkpoint& fixture, const std::string& path) {
  std::vector<TensorSpec> specs;
  for (const std::string& name : fixture.names()) {
    const TensorView& t = fixture.tensor(name);
    specs.push_back({name, t.dtype, t.shape});
  }
  std::sort(specs.begin(), specs.end(), safetensors_order);
  SafetensorsWriter writer(path, specs);
  for (const TensorSpec& s : specs) writer.append(fixture.tensor(s.name).data, s.bytes());
  writer.finish();
  return read_file(path);
}

TEST(Quantize, ReproducesTheW4A16Fixture) {
  ScratchDir scratch;
  const std::string fixture = fixtures_dir() + "/stories260K-hf-w4a16-ct";
  const QuantizeOptions o = options_for(fixtures_dir() + "/stories260K-hf", scratch.file("out"), 0,
                                        false, WeightFormat::pack_quantized);
  const QuantizeReport report = quantize_checkpoint(o);
  EXPECT_EQ(report.quantized_modules, 35);
  EXPECT_EQ(report.linear_modules, 35);
  EXPECT_EQ(report.shards, 1u);
  EXPECT_EQ(report.copied_files, 1);  // tokenizer.json

  // Quantized as torch does it (f32 division, round half to even), every tensor is the fixture's,
  // bytes, dtype and shape: no int4 value or scale differs.
  const Checkpoint expected = Checkpoint::open_dir(fixture);
  const Checkpoint actual = Checkpoint::open_dir(o.output_dir);
  ASSERT_EQ(actual.names(), expected.names());
  for (const std::string& name : expected.names()) {
    SCOPED_TRACE(name);
    const TensorView& e = expected.tensor(name);
    const TensorView& a = actual.tensor(name);
    EXPECT_EQ(a.dtype, e.dtype);
    EXPECT_EQ(a.shape, e.shape);
    EXPECT_TRUE(bytes_of(a) == bytes_of(e));
  }
  // And the whole file, header and padding included, is those tensors in the library's layout.
  EXPECT_TRUE(read_file(o.output_dir + "/model.safetensors") ==
              fixture_in_library_order(expected, scratch.file("fixture.safetensors")));

  nlohmann::json config = read_json(o.output_dir + "/config.json");
  const nlohmann::json expected_config = read_json(fixture + "/config.json");
  nlohmann::json& q = config["quantization_config"];
  EXPECT_EQ(q["version"], "0.12.2");
  EXPECT_EQ(q["config_groups"]["group_0"]["format"], "pack-quantized");
  q.erase("version");  // the fixture's config has neither of these two keys
  q["config_groups"]["group_0"].erase("format");
  EXPECT_EQ(config, expected_config) << config.dump(2);
  EXPECT_EQ(read_file(o.output_dir + "/tokenizer.json"),
            read_file(fixtures_dir() + "/stories260K-hf/tokenizer.json"));
}

TEST(Quantize, W4A8ConfigIsTheCompressedTensorsOne) {
  ScratchDir scratch;
  const QuantizeOptions o = options_for(fixtures_dir() + "/stories260K-hf", scratch.file("out"), 32,
                                        true, WeightFormat::int_quantized);
  quantize_checkpoint(o);
  const nlohmann::json q = read_json(o.output_dir + "/config.json")["quantization_config"];
  const nlohmann::json expected = nlohmann::json::parse(R"({
    "config_groups": {"group_0": {
      "format": "int-quantized",
      "input_activations": {"actorder": null, "block_structure": null, "dynamic": true,
        "group_size": null, "num_bits": 8, "observer": null, "observer_kwargs": {},
        "strategy": "token", "symmetric": false, "type": "int"},
      "output_activations": null, "targets": ["Linear"],
      "weights": {"actorder": null, "block_structure": null, "dynamic": false, "group_size": 32,
        "num_bits": 4, "observer": "minmax", "observer_kwargs": {}, "strategy": "group",
        "symmetric": true, "type": "int"}}},
    "format": "int-quantized", "global_compression_ratio": null, "ignore": ["lm_head"],
    "kv_cache_scheme": null, "quant_method": "compressed-tensors",
    "quantization_status": "compressed", "sparsity_config": {}, "transform_config": {},
    "version": "0.12.2"})");
  EXPECT_EQ(q, expected) << q.dump(2);
  // Keys sorted at every level in the file itself, as compressed-tensors writes them.
  const std::string text = read_file(o.output_dir + "/config.json");
  EXPECT_LT(text.find("\"config_groups\""), text.find("\"format\": \"int-quantized\",\n  "));
  EXPECT_LT(text.find("\"input_activations\""), text.find("\"weights\""));
}

struct RoundTripCase {
  const char* name;
  int64_t group_size;
  bool w4a8;
  WeightFormat format;
};

class QuantizeRoundTrip : public testing::TestWithParam<RoundTripCase> {};

TEST_P(QuantizeRoundTrip, Stories260KF32) {  // down_proj: K = 172, a partial last group of 12
  ScratchDir scratch;
  const RoundTripCase& c = GetParam();
  const QuantizeOptions o = options_for(fixtures_dir() + "/stories260K-hf", scratch.file("out"),
                                        c.group_size, c.w4a8, c.format);
  quantize_checkpoint(o);
  expect_round_trip(o, {});
}

TEST_P(QuantizeRoundTrip, SyntheticBf16AndF16) {  // down_proj: K = 200; lm_head untied, ignored
  ScratchDir scratch;
  const RoundTripCase& c = GetParam();
  for (const Dtype dtype : {Dtype::BF16, Dtype::F16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const std::string in =
        synth(scratch, std::string("in-") + std::string(dtype_name(dtype)), dtype);
    const QuantizeOptions o = options_for(in, in + "-out", c.group_size, c.w4a8, c.format);
    const QuantizeReport report = quantize_checkpoint(o);
    EXPECT_EQ(report.linear_modules, 15);
    EXPECT_EQ(report.quantized_modules, 14);
    expect_round_trip(o, {"lm_head"});
  }
}

INSTANTIATE_TEST_SUITE_P(
    Schemes, QuantizeRoundTrip,
    testing::Values(RoundTripCase{"W4A8IntG32", 32, true, WeightFormat::int_quantized},
                    RoundTripCase{"W4A8PackG32", 32, true, WeightFormat::pack_quantized},
                    RoundTripCase{"W4A8IntChannel", 0, true, WeightFormat::int_quantized},
                    RoundTripCase{"W4A8PackChannel", 0, true, WeightFormat::pack_quantized},
                    RoundTripCase{"W4A16PackG64", 64, false, WeightFormat::pack_quantized}),
    [](const testing::TestParamInfo<RoundTripCase>& info) { return info.param.name; });

TEST(Quantize, IgnoreTakesNamesAndRegexesMatchedAtTheStart) {
  ScratchDir scratch;
  QuantizeOptions o = options_for(fixtures_dir() + "/stories260K-hf", scratch.file("out"), 32, true,
                                  WeightFormat::int_quantized);
  // "re:mlp" matches nothing: re.match anchors at the start of the name.
  o.ignore = {"re:.*down_proj", "model.layers.0.self_attn.q_proj", "re:mlp"};
  const QuantizeReport report = quantize_checkpoint(o);
  EXPECT_EQ(report.quantized_modules, 35 - 5 - 1);
  std::set<std::string> ignored{"model.layers.0.self_attn.q_proj"};
  for (int layer = 0; layer < 5; ++layer)
    ignored.insert("model.layers." + std::to_string(layer) + ".mlp.down_proj");
  expect_round_trip(o, ignored);
  EXPECT_EQ(
      read_json(o.output_dir + "/config.json")["quantization_config"]["ignore"],
      nlohmann::json({"lm_head", "re:.*down_proj", "model.layers.0.self_attn.q_proj", "re:mlp"}));
}

TEST(Quantize, ShardedInputAndShardedOutput) {
  ScratchDir scratch;
  const std::string in = synth(scratch, "in", Dtype::BF16, 60'000);
  ASSERT_TRUE(fs::exists(in + "/model.safetensors.index.json"));
  ASSERT_GT(Checkpoint::open_dir(in).files().size(), 2u);

  QuantizeOptions o = options_for(in, scratch.file("out"), 32, true, WeightFormat::int_quantized);
  o.max_shard_bytes = 40'000;
  const QuantizeReport report = quantize_checkpoint(o);
  EXPECT_GT(report.shards, 2u);
  expect_round_trip(o, {"lm_head"});

  const nlohmann::json index = read_json(o.output_dir + "/model.safetensors.index.json");
  const Checkpoint out = Checkpoint::open_dir(o.output_dir);
  ASSERT_EQ(out.files().size(), report.shards);
  uint64_t total = 0;
  std::set<std::string> files;
  for (const std::string& name : out.names()) {
    total += out.tensor(name).bytes;
    files.insert(index["weight_map"][name].get<std::string>());
  }
  EXPECT_EQ(index["metadata"]["total_size"].get<uint64_t>(), total);
  EXPECT_EQ(index["weight_map"].size(), out.names().size());
  EXPECT_EQ(files.size(), report.shards);
  char last[64];
  std::snprintf(last, sizeof last, "model-%05zu-of-%05zu.safetensors", report.shards,
                report.shards);
  EXPECT_TRUE(files.count("model-00001-of-" + std::string(last).substr(15)));
  EXPECT_TRUE(files.count(last));
  for (const SafetensorsFile& shard : out.files()) {  // a bigger tensor gets a shard of its own
    uint64_t bytes = 0;
    for (const TensorView& t : shard.tensors()) bytes += t.bytes;
    if (shard.tensors().size() > 1) {
      EXPECT_LE(bytes, 40'000u) << shard.path();
    }
  }
}

// A copy of stories260K-hf whose model.layers.4.mlp.up_proj.weight (written late: the data is in
// name order) holds a NaN.
std::string model_with_nan(const ScratchDir& scratch) {
  const std::string source = fixtures_dir() + "/stories260K-hf";
  const std::string dir = scratch.file("nan-model");
  fs::create_directory(dir);
  fs::copy_file(source + "/config.json", dir + "/config.json");
  const Checkpoint in = Checkpoint::open_dir(source);
  std::vector<TestTensor> tensors;
  for (const std::string& name : in.names()) {
    const TensorView& t = in.tensor(name);
    tensors.push_back({name, "F32", t.shape, std::vector<uint8_t>(t.data, t.data + t.bytes)});
  }
  for (TestTensor& t : tensors)
    if (t.name == "model.layers.4.mlp.up_proj.weight") {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(t.data.data() + 4 * 100, &nan, 4);  // [1][36] of [172, 64]
    }
  write_safetensors(dir + "/model.safetensors", tensors);
  return dir;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Quantize, FailureMidwayLeavesNoOutput) {
  ScratchDir scratch;
  const std::string in = model_with_nan(scratch);
  const QuantizeOptions o =
      options_for(in, scratch.file("out"), 32, true, WeightFormat::int_quantized);
  expect_error([&] { quantize_checkpoint(o); },
               {"model.layers.4.mlp.up_proj.weight", "weight[1][36] is NaN"});
  EXPECT_EQ(entries(scratch.path()), (std::vector<std::string>{"nan-model"}));  // no out, no tmp
}

TEST(Quantize, ExistingOutputIsRefusedUnlessReplaced) {
  ScratchDir scratch;
  const std::string out = scratch.file("out");
  fs::create_directory(out);
  write_file(out + "/old.txt", "old");
  QuantizeOptions o =
      options_for(fixtures_dir() + "/stories260K-hf", out, 32, true, WeightFormat::int_quantized);
  expect_error([&] { quantize_checkpoint(o); }, {out, "already exists", "--force"});
  EXPECT_TRUE(fs::exists(out + "/old.txt"));
  o.replace_existing = true;
  quantize_checkpoint(o);
  EXPECT_FALSE(fs::exists(out + "/old.txt"));
  EXPECT_TRUE(fs::exists(out + "/model.safetensors"));
  EXPECT_EQ(entries(scratch.path()), (std::vector<std::string>{"out"}));  // old copy deleted
}

TEST(Quantize, MalformedInputsAreErrorsNamingTheFault) {
  ScratchDir scratch;
  const std::string source = fixtures_dir() + "/stories260K-hf";
  const std::string dir = scratch.file("model");
  fs::create_directory(dir);
  const auto attempt = [&] {
    quantize_checkpoint(
        options_for(dir, scratch.file("out"), 32, true, WeightFormat::int_quantized));
  };
  expect_error(attempt, {dir + "/config.json"});  // no config.json

  fs::copy_file(source + "/config.json", dir + "/config.json");
  expect_error(attempt, {dir, "model.safetensors"});  // no weights

  // A linear weight missing, then one of an unsupported dtype.
  const Checkpoint in = Checkpoint::open_dir(source);
  std::vector<TestTensor> tensors;
  for (const std::string& name : in.names()) {
    const TensorView& t = in.tensor(name);
    if (name == "model.layers.2.self_attn.v_proj.weight") continue;
    tensors.push_back({name, "F32", t.shape, std::vector<uint8_t>(t.data, t.data + t.bytes)});
  }
  write_safetensors(dir + "/model.safetensors", tensors);
  expect_error(attempt, {"model.layers.2.self_attn.v_proj.weight", dir});

  tensors.push_back({"model.layers.2.self_attn.v_proj.weight",
                     "F64",
                     {32, 64},
                     std::vector<uint8_t>(32 * 64 * 8)});
  write_safetensors(dir + "/model.safetensors", tensors);
  expect_error(attempt, {"model.layers.2.self_attn.v_proj.weight", "F64"});

  tensors.back() = {
      "model.layers.2.self_attn.v_proj.weight", "F32", {64, 32}, std::vector<uint8_t>(32 * 64 * 4)};
  write_safetensors(dir + "/model.safetensors", tensors);
  expect_error(attempt, {"model.layers.2.self_attn.v_proj.weight", "[64, 32]", "[32, 64]"});

  // An already quantized model.
  expect_error(
      [&] {
        quantize_checkpoint(options_for(fixtures_dir() + "/stories260K-hf-w4a16-ct",
                                        scratch.file("out"), 32, true,
                                        WeightFormat::int_quantized));
      },
      {"config.json", "already has a quantization_config"});
  EXPECT_FALSE(fs::exists(scratch.file("out")));
}

}  // namespace
}  // namespace dq4::test
