// compressed-tensors quantization_config -> per-module scheme: the doc's example configs, presets,
// targets/ignore matching and precedence, and every refusal naming the module and the field.

#include "dq4/io/quant_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "expect_error.h"
#include "fixtures.h"

namespace dq4::test {
namespace {

const char* kQ = "model.layers.0.self_attn.q_proj";

// The W4A8 group-32 example of shared/docs/checkpoint-format-and-math.md §2.7.
nlohmann::json w4a8_config() {
  return nlohmann::json::parse(R"({"quantization_config": {
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
    "version": "0.12.2"}})");
}

QuantizationConfig parse(const nlohmann::json& j) {
  return QuantizationConfig::parse(j.dump(), "config.json");
}

nlohmann::json& group0(nlohmann::json& j) {
  return j["quantization_config"]["config_groups"]["group_0"];
}

TEST(QuantConfig, W4A8GroupwiseExample) {
  const QuantizationConfig c = parse(w4a8_config());
  ASSERT_TRUE(c.quantized());
  const LinearScheme s = c.resolve(kQ);
  EXPECT_EQ(s.kind, LinearKind::w4a8);
  EXPECT_EQ(s.format, WeightFormat::int_quantized);
  EXPECT_EQ(s.group_size, 32);
  EXPECT_EQ(s.config_group, "group_0");
  const LinearScheme head = c.resolve("lm_head");
  EXPECT_EQ(head.kind, LinearKind::dense);
  EXPECT_EQ(head.reason, "ignored by 'lm_head'");
}

TEST(QuantConfig, ChannelwiseAndPackQuantizedW4A8) {
  nlohmann::json j = w4a8_config();
  group0(j)["weights"]["strategy"] = "channel";
  group0(j)["weights"]["group_size"] = nullptr;
  group0(j)["format"] = "pack-quantized";
  const LinearScheme s = parse(j).resolve(kQ);
  EXPECT_EQ(s.kind, LinearKind::w4a8);
  EXPECT_EQ(s.format, WeightFormat::pack_quantized);
  EXPECT_EQ(s.group_size, 0);
}

TEST(QuantConfig, StrategyInferredFromGroupSize) {
  nlohmann::json j = w4a8_config();
  group0(j)["weights"]["strategy"] = nullptr;
  group0(j)["weights"]["group_size"] = -1;
  EXPECT_EQ(parse(j).resolve(kQ).group_size, 0);
  group0(j)["weights"]["group_size"] = 64;
  EXPECT_EQ(parse(j).resolve(kQ).group_size, 64);
  group0(j)["weights"]["group_size"] = nullptr;  // -> tensor strategy
  expect_error([&] { parse(j).resolve(kQ); }, {kQ, "weights.strategy", "'tensor'"});
}

TEST(QuantConfig, W4A16FixtureConfig) {
  const QuantizationConfig c =
      QuantizationConfig::read(fixtures_dir() + "/stories260K-hf-w4a16-ct");
  const LinearScheme s = c.resolve("model.layers.4.mlp.down_proj");
  EXPECT_EQ(s.kind, LinearKind::w4a16);
  EXPECT_EQ(s.format, WeightFormat::pack_quantized);
  EXPECT_EQ(s.group_size, 0);
  EXPECT_EQ(c.resolve("lm_head").kind, LinearKind::dense);
}

TEST(QuantConfig, UnquantizedModel) {
  const QuantizationConfig c = QuantizationConfig::read(fixtures_dir() + "/stories260K-hf");
  EXPECT_FALSE(c.quantized());
  const LinearScheme s = c.resolve(kQ);
  EXPECT_EQ(s.kind, LinearKind::dense);
  EXPECT_EQ(s.reason, "no quantization_config");
}

TEST(QuantConfig, PresetGroups) {
  nlohmann::json j = {{"quantization_config",
                       {{"config_groups", {{"W4A16", {"Linear"}}}},
                        {"format", "pack-quantized"},
                        {"quant_method", "compressed-tensors"}}}};
  LinearScheme s = parse(j).resolve(kQ);
  EXPECT_EQ(s.kind, LinearKind::w4a16);
  EXPECT_EQ(s.group_size, 128);
  j["quantization_config"]["config_groups"] = {{"W4A8", {"Linear"}}};
  j["quantization_config"]["format"] = "int-quantized";
  s = parse(j).resolve(kQ);
  EXPECT_EQ(s.kind, LinearKind::w4a8);
  EXPECT_EQ(s.format, WeightFormat::int_quantized);
  j["quantization_config"]["config_groups"] = {{"W8A8", {"Linear"}}};
  expect_error([&] { parse(j).resolve(kQ); }, {kQ, "weights.num_bits", "8-bit"});
  j["quantization_config"]["config_groups"] = {{"FP8_DYNAMIC", {"Linear"}}};
  expect_error([&] { parse(j).resolve(kQ); }, {kQ, "weights.type", "float"});
  j["quantization_config"]["config_groups"] = {{"W3A5", {"Linear"}}};
  expect_error([&] { parse(j); }, {"config_groups.W3A5", "unknown preset"});
}

TEST(QuantConfig, FormatInferredWhenAbsent) {
  nlohmann::json j = w4a8_config();
  group0(j).erase("format");
  j["quantization_config"].erase("format");
  EXPECT_EQ(parse(j).resolve(kQ).format, WeightFormat::int_quantized);
  group0(j)["input_activations"] = nullptr;
  EXPECT_EQ(parse(j).resolve(kQ).format, WeightFormat::pack_quantized);
}

TEST(QuantConfig, GroupFormatOverridesGlobalAndMixedPrecision) {
  nlohmann::json j = w4a8_config();
  j["quantization_config"]["format"] = "mixed-precision";
  EXPECT_EQ(parse(j).resolve(kQ).format, WeightFormat::int_quantized);
  group0(j).erase("format");
  expect_error([&] { parse(j).resolve(kQ); }, {kQ, "format", "mixed-precision"});
  group0(j)["format"] = "marlin-24";
  expect_error([&] { parse(j).resolve(kQ); }, {kQ, "group_0.format", "marlin-24"});
}

TEST(QuantConfig, TargetsAndIgnoreMatching) {
  nlohmann::json j = w4a8_config();
  auto& q = j["quantization_config"];
  q["ignore"] = {"re:.*mlp\\.down_proj$", "model.layers.1.self_attn.o_proj"};
  group0(j)["targets"] = {"re:model\\.layers\\.[01]\\."};
  const QuantizationConfig c = parse(j);
  EXPECT_EQ(c.resolve("model.layers.0.mlp.up_proj").kind, LinearKind::w4a8);
  EXPECT_EQ(c.resolve("model.layers.2.mlp.up_proj").reason, "not targeted");
  EXPECT_EQ(c.resolve("model.layers.0.mlp.down_proj").reason, "ignored by 're:.*mlp\\.down_proj$'");
  EXPECT_EQ(c.resolve("model.layers.1.self_attn.o_proj").kind, LinearKind::dense);
  // re.match anchors at the start only: "layers" alone does not match at position 0.
  group0(j)["targets"] = {"re:layers"};
  EXPECT_EQ(parse(j).resolve("model.layers.0.mlp.up_proj").reason, "not targeted");
}

TEST(QuantConfig, ExactNameBeatsRegexBeatsClass) {
  nlohmann::json j = w4a8_config();
  nlohmann::json& groups = j["quantization_config"]["config_groups"];
  groups["by_class"] = groups["group_0"];  // group 32, W4A8
  groups["by_regex"] = groups["group_0"];
  groups["by_regex"]["targets"] = {"re:.*self_attn"};
  groups["by_regex"]["weights"]["group_size"] = 64;
  groups["by_name"] = groups["group_0"];
  groups["by_name"]["targets"] = {kQ};
  groups["by_name"]["input_activations"] = nullptr;
  groups.erase("group_0");
  const QuantizationConfig c = parse(j);
  EXPECT_EQ(c.resolve(kQ).config_group, "by_name");
  EXPECT_EQ(c.resolve(kQ).kind, LinearKind::w4a16);
  EXPECT_EQ(c.resolve("model.layers.0.self_attn.k_proj").group_size, 64);
  EXPECT_EQ(c.resolve("model.layers.0.mlp.up_proj").group_size, 32);
  groups["also_by_class"] = groups["by_class"];
  expect_error([&] { parse(j).resolve("model.layers.0.mlp.up_proj"); },
               {"model.layers.0.mlp.up_proj", "ambiguous"});
}

TEST(QuantConfig, LegacyCompressionConfigKey) {
  nlohmann::json j = w4a8_config();
  j["compression_config"] = j["quantization_config"];
  j.erase("quantization_config");
  EXPECT_EQ(parse(j).resolve(kQ).kind, LinearKind::w4a8);
}

TEST(QuantConfig, ActorderStaticRunsGroupRefused) {
  nlohmann::json j = w4a8_config();
  group0(j)["weights"]["actorder"] = "static";
  EXPECT_EQ(parse(j).resolve(kQ).kind, LinearKind::w4a8);
  group0(j)["weights"]["actorder"] = "group";
  expect_error([&] { parse(j).resolve(kQ); }, {kQ, "weights.actorder", "g_idx"});
}

// Each unsupported scheme field is refused when a module uses it, naming module and field.
TEST(QuantConfig, UnsupportedSchemesNameModuleAndField) {
  struct Case {
    const char* pointer;
    nlohmann::json value;
    const char* field;
  };
  const Case cases[] = {
      {"/weights/symmetric", false, "weights.symmetric"},
      {"/weights/num_bits", 8, "weights.num_bits"},
      {"/weights/type", "float", "weights.type"},
      {"/weights/dynamic", true, "weights.dynamic"},
      {"/weights/group_size", 16, "weights.group_size"},
      {"/weights/strategy", "block", "weights.strategy"},
      {"/input_activations/strategy", "tensor", "input_activations.strategy"},
      {"/input_activations/dynamic", false, "input_activations.dynamic"},
      {"/input_activations/num_bits", 4, "input_activations.num_bits"},
      {"/input_activations/type", "float", "input_activations.type"},
      {"/output_activations", {{"num_bits", 8}}, "output_activations"},
      {"/weights", nullptr, "weights"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pointer);
    nlohmann::json j = w4a8_config();
    group0(j)[nlohmann::json::json_pointer(c.pointer)] = c.value;
    const QuantizationConfig config = parse(j);  // parses: other modules may still run
    expect_error([&] { config.resolve(kQ); },
                 {"config.json", kQ, std::string("config_groups.group_0.") + c.field});
    EXPECT_EQ(config.resolve("lm_head").kind, LinearKind::dense);
  }
}

TEST(QuantConfig, ModelWideRefusals) {
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* fragment;
  };
  const Case cases[] = {
      {"transform_config",
       {{"config_groups", {{"u", {{"type", "hadamard"}}}}}},
       "transform_config"},
      {"kv_cache_scheme", {{"num_bits", 8}, {"type", "float"}}, "kv_cache_scheme"},
      {"quantization_status", "frozen", "quantization_status"},
      {"quant_method", "gptq", "quant_method"},
      {"sparsity_config", {{"format", "sparse-24-bitmask"}}, "sparsity_config.format"},
      {"config_groups", nlohmann::json::object(), "config_groups"},
      {"config_groups", 3, "config_groups"},
      {"ignore", "lm_head", "ignore"},
      {"ignore", {"re:("}, "bad regex"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key);
    nlohmann::json j = w4a8_config();
    j["quantization_config"][c.key] = c.value;
    expect_error([&] { parse(j); }, {"config.json", c.fragment});
  }
}

// A value nested 100,000 deep where a string belongs is quoted as a short prefix (spliced in as
// text: building it as a JSON value would recurse as deep).
TEST(QuantConfig, DeeplyNestedValueGivesAShortError) {
  nlohmann::json j = w4a8_config();
  j["quantization_config"]["ignore"] = {"@VALUE@"};
  std::string text = j.dump();
  text.replace(text.find("\"@VALUE@\""), 9, std::string(100000, '[') + std::string(100000, ']'));
  try {
    QuantizationConfig::parse(text, "config.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ignore: expected strings, got [[[["), std::string::npos)
        << e.what();
    EXPECT_LT(std::string(e.what()).size(), 200u) << e.what();
  }
}

TEST(QuantConfig, MalformedJsonNamesTheFile) {
  expect_error([] { QuantizationConfig::parse("{\"quantization_config\": ", "x/config.json"); },
               {"x/config.json", "not valid JSON"});
  expect_error([] { QuantizationConfig::parse("[]", "x/config.json"); },
               {"x/config.json", "expected a JSON object"});
  expect_error([] { QuantizationConfig::read("/nonexistent-dq4-dir"); },
               {"/nonexistent-dq4-dir/config.json"});
  nlohmann::json j = w4a8_config();
  group0(j)["weights"]["num_bits"] = "4";
  expect_error([&] { parse(j); }, {"group_0.weights.num_bits", "expected an integer"});
  group0(j)["weights"]["num_bits"] = 4;
  group0(j)["targets"] = {1};
  expect_error([&] { parse(j); }, {"group_0.targets", "expected strings"});
}

}  // namespace
}  // namespace dq4::test
