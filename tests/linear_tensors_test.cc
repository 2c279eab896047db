// A linear module's tensors found under its resolved scheme: the W4A16 fixture end to end (values,
// scales and dequantized samples equal its reference), and every mismatch between the config and
// the tensors actually present named in the error.

#include "dq4/io/linear_tensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "dq4/io/model_config.h"
#include "dq4/kernels/int4_codec.h"
#include "dq4/kernels/w4a8.h"
#include "dq4/model/architecture.h"
#include "expect_error.h"
#include "fixtures.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

TEST(LinearTensors, W4A16FixtureEveryModule) {
  const std::string dir = fixtures_dir() + "/stories260K-hf-w4a16-ct";
  const Checkpoint checkpoint = Checkpoint::open_dir(dir);
  const QuantizationConfig config = QuantizationConfig::read(dir);
  const auto modules = Architecture::read(dir).linear_modules();
  ASSERT_EQ(modules.size(), 35u);
  for (const LinearModule& m : modules) {
    SCOPED_TRACE(m.name);
    const LinearTensors t = find_linear_tensors(checkpoint, m.name, config.resolve(m.name));
    EXPECT_EQ(t.n, m.out_features);
    EXPECT_EQ(t.k, m.in_features);
    EXPECT_EQ(t.scheme.kind, LinearKind::w4a16);
    const int4::WeightSource source = t.int4_source();
    EXPECT_NE(source.packed, nullptr);
    EXPECT_EQ(source.scale_type, int4::ScaleType::f32);
    // The kernel library accepts the views as they are (values in range, scales finite).
    EXPECT_EQ(w4a8::pack(source).n(), m.out_features);
  }
}

TEST(LinearTensors, W4A16FixtureMatchesReferenceSamples) {
  const std::string dir = fixtures_dir() + "/stories260K-hf-w4a16-ct";
  const Checkpoint checkpoint = Checkpoint::open_dir(dir);
  const QuantizationConfig config = QuantizationConfig::read(dir);
  std::ifstream in(dir + "/reference_dequant_samples.json");
  ASSERT_TRUE(in) << "cannot open " << dir << "/reference_dequant_samples.json";
  const nlohmann::json reference = nlohmann::json::parse(in)["tensors"];
  for (const char* module : {"model.layers.0.mlp.down_proj", "model.layers.0.self_attn.q_proj"}) {
    SCOPED_TRACE(module);
    const nlohmann::json& ref = reference[std::string(module) + ".weight"];
    const LinearTensors t = find_linear_tensors(checkpoint, module, config.resolve(module));
    const int4::WeightSource s = t.int4_source();
    std::vector<int8_t> values(static_cast<size_t>(s.n * s.k));
    unpack_int4_rows(s.packed, s.n, s.k, values.data());
    const auto* scales = static_cast<const float*>(s.scales);
    for (int64_t r = 0; r < 2; ++r) {
      EXPECT_EQ(scales[r], ref["weight_scale_first_2_rows"][r].get<float>());
      for (int64_t k = 0; k < s.k; ++k) {
        const int8_t q = values[static_cast<size_t>(r * s.k + k)];
        ASSERT_EQ(q, ref["int4_values_first_2_rows"][r][k].get<int>()) << "row " << r << " k " << k;
        EXPECT_EQ(static_cast<float>(q) * scales[r],
                  ref["dequantized_first_2_rows"][r][k].get<float>());
      }
    }
  }
}

TestTensor tensor(const std::string& name, const std::string& dtype, std::vector<int64_t> shape,
                  size_t element_size, uint8_t fill = 0) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return {name, dtype, shape,
          std::vector<uint8_t>(static_cast<size_t>(count) * element_size, fill)};
}

TestTensor i64_pair(const std::string& name, int64_t a, int64_t b) {
  TestTensor t{name, "I64", {2}, std::vector<uint8_t>(16)};
  std::memcpy(t.data.data(), &a, 8);
  std::memcpy(t.data.data() + 8, &b, 8);
  return t;
}

LinearScheme scheme(LinearKind kind, WeightFormat format, int64_t group_size) {
  LinearScheme s;
  s.kind = kind;
  s.format = format;
  s.group_size = group_size;
  return s;
}

// A module "m" of 4 x 40 (groups of 32: two scale columns) stored as `tensors`.
void expect_module(const std::vector<TestTensor>& tensors, const LinearScheme& s,
                   std::initializer_list<std::string> error_fragments) {
  ScratchDir dir;
  write_safetensors(dir.file("model.safetensors"), tensors);
  const Checkpoint checkpoint = Checkpoint::open_dir(dir.path());
  if (error_fragments.size() == 0) {
    const LinearTensors t = find_linear_tensors(checkpoint, "m", s);
    EXPECT_EQ(t.n, 4);
    EXPECT_EQ(t.k, 40);
    return;
  }
  expect_error([&] { find_linear_tensors(checkpoint, "m", s); }, error_fragments);
}

TEST(LinearTensors, IntQuantizedGroupwise) {
  const LinearScheme s = scheme(LinearKind::w4a8, WeightFormat::int_quantized, 32);
  const auto weight = tensor("m.weight", "I8", {4, 40}, 1);
  const auto scale = tensor("m.weight_scale", "BF16", {4, 2}, 2, 0x3f);
  expect_module({weight, scale}, s, {});
  expect_module({weight, scale, tensor("m.bias", "BF16", {4}, 2)}, s, {});
  expect_module({weight}, s, {"module 'm'", "'m.weight_scale' is missing"});
  expect_module({weight, tensor("m.weight_scale", "BF16", {4, 1}, 2)}, s,
                {"'m.weight_scale'", "expected shape [4, 2]"});
  expect_module({weight, tensor("m.weight_scale", "I32", {4, 2}, 4)}, s,
                {"'m.weight_scale'", "F32, BF16 or F16"});
  expect_module({tensor("m.weight", "BF16", {4, 40}, 2), scale}, s,
                {"'m.weight' (BF16 [4, 40]", "must be I8"});
  expect_module(
      {tensor("m.weight_packed", "I32", {4, 5}, 4), i64_pair("m.weight_shape", 4, 40), scale}, s,
      {"int-quantized", "'m.weight_packed'", "pack-quantized"});
  expect_module({weight, scale, tensor("m.bias", "F32", {5}, 4)}, s, {"'m.bias'", "[4]"});
  expect_module({weight, scale, tensor("m.weight_g_idx", "I32", {40}, 4)}, s,
                {"'m.weight_g_idx'", "g_idx"});
  // Zero points: all-zero ones (old symmetric exports) are ignored, others refused.
  expect_module({weight, scale, tensor("m.weight_zero_point", "I8", {4, 2}, 1)}, s, {});
  expect_module({weight, scale, tensor("m.weight_zero_point", "I8", {4, 2}, 1, 1)}, s,
                {"'m.weight_zero_point'", "asymmetric"});
}

TEST(LinearTensors, PackQuantizedChannelwise) {
  const LinearScheme s = scheme(LinearKind::w4a16, WeightFormat::pack_quantized, 0);
  const auto packed = tensor("m.weight_packed", "I32", {4, 5}, 4, 0x88);
  const auto scale = tensor("m.weight_scale", "F16", {4, 1}, 2, 0x3c);
  expect_module({packed, i64_pair("m.weight_shape", 4, 40), scale}, s, {});
  TestTensor shape32{"m.weight_shape", "I32", {2}, {4, 0, 0, 0, 40, 0, 0, 0}};
  expect_module({packed, shape32, scale}, s, {});
  expect_module({packed, scale}, s, {"'m.weight_shape' is missing"});
  expect_module({packed, i64_pair("m.weight_shape", 4, 48), scale}, s,
                {"'m.weight_packed'", "expected shape [4, 6]"});
  expect_module({packed, i64_pair("m.weight_shape", -4, 40), scale}, s,
                {"'m.weight_shape'", "[-4, 40]"});
  expect_module({tensor("m.weight", "I8", {4, 40}, 1), scale}, s,
                {"pack-quantized", "'m.weight' (I8"});
}

TEST(LinearTensors, DenseModules) {
  LinearScheme s;
  s.reason = "ignored by 'm'";
  expect_module({tensor("m.weight", "BF16", {4, 40}, 2)}, s, {});
  expect_module({tensor("m.weight", "I8", {4, 40}, 1)}, s, {"'m.weight' (I8", "F32, BF16 or F16"});
  expect_module(
      {tensor("m.weight", "BF16", {4, 40}, 2), tensor("m.weight_scale", "BF16", {4, 1}, 2)}, s,
      {"ignored by 'm'", "'m.weight_scale'"});
  ScratchDir dir;
  write_safetensors(dir.file("model.safetensors"), {tensor("m.weight", "F32", {4, 40}, 4)});
  const Checkpoint checkpoint = Checkpoint::open_dir(dir.path());  // the views point into it
  const LinearTensors t = find_linear_tensors(checkpoint, "m", s);
  expect_error([&] { t.int4_source(); }, {"module 'm' is dense"});
  EXPECT_EQ(t.bytes(), 4u * 40 * 4);
}

}  // namespace
}  // namespace dq4::test
