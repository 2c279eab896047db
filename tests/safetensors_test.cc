// SafetensorsFile: the shared fixtures load with the names, dtypes, shapes and values their
// READMEs document; every malformed file gives a dq4::Error naming the file and the tensor/field.

#include "dq4/io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dq4/kernels/error.h"
#include "expect_error.h"
#include "fixtures.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

std::vector<uint8_t> f32_bytes(std::initializer_list<float> values) {
  std::vector<uint8_t> out(values.size() * 4);
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) ADD_FAILURE() << "cannot open fixture " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Safetensors, Stories260KFixture) {
  const std::string path = fixtures_dir() + "/stories260K-hf/model.safetensors";
  const auto file = SafetensorsFile::open(path);
  EXPECT_EQ(file.path(), path);
  EXPECT_EQ(file.tensors().size(), 47u);
  EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"format", "pt"}}));
  EXPECT_EQ(file.find("lm_head.weight"), nullptr);  // tied to the embeddings

  const TensorView& embed = file.tensor("model.embed_tokens.weight");
  EXPECT_EQ(embed.dtype, Dtype::F32);
  EXPECT_EQ(embed.shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(embed.bytes, 512u * 64 * 4);
  EXPECT_EQ(embed.file, path);
  EXPECT_EQ(embed.as<float>().size(), 512u * 64);
  EXPECT_EQ(file.tensor("model.layers.0.mlp.down_proj.weight").shape,
            (std::vector<int64_t>{64, 172}));
  EXPECT_EQ(file.tensor("model.layers.4.self_attn.k_proj.weight").shape,
            (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(file.tensor("model.norm.weight").shape, (std::vector<int64_t>{64}));

  // The views tile the data region, which ends with the file.
  const uint8_t* base = file.tensors().front().data;
  size_t total = 0;
  for (const auto& t : file.tensors()) {
    EXPECT_EQ(t.data, base + total) << t.name;
    total += t.bytes;
  }
  const auto bytes = read_bytes(path);
  ASSERT_EQ(bytes.size(), 1044992u);
  EXPECT_EQ(std::memcmp(bytes.data() + bytes.size() - total, base, total), 0);
}

TEST(Safetensors, W4A16Fixture) {
  const std::string dir = fixtures_dir() + "/stories260K-hf-w4a16-ct";
  const auto file = SafetensorsFile::open(dir + "/model.safetensors");
  EXPECT_EQ(file.tensors().size(), 35u * 3 + 5 * 2 + 2);

  const TensorView& packed = file.tensor("model.layers.0.mlp.down_proj.weight_packed");
  EXPECT_EQ(packed.dtype, Dtype::I32);
  EXPECT_EQ(packed.shape, (std::vector<int64_t>{64, 22}));
  const TensorView& scale = file.tensor("model.layers.0.mlp.down_proj.weight_scale");
  EXPECT_EQ(scale.dtype, Dtype::F32);
  EXPECT_EQ(scale.shape, (std::vector<int64_t>{64, 1}));
  const TensorView& shape = file.tensor("model.layers.0.mlp.down_proj.weight_shape");
  EXPECT_EQ(shape.dtype, Dtype::I64);
  EXPECT_EQ(shape.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(std::vector<int64_t>(shape.as<int64_t>().begin(), shape.as<int64_t>().end()),
            (std::vector<int64_t>{64, 172}));
  EXPECT_EQ(file.tensor("model.layers.3.self_attn.q_proj.weight_packed").shape,
            (std::vector<int64_t>{64, 8}));
  EXPECT_EQ(file.tensor("model.embed_tokens.weight").dtype, Dtype::F32);
  EXPECT_EQ(file.find("model.layers.0.mlp.down_proj.weight"), nullptr);

  // The values match the fixture's reference samples.
  std::ifstream in(dir + "/reference_dequant_samples.json");
  ASSERT_TRUE(in) << "cannot open " << dir << "/reference_dequant_samples.json";
  const auto ref = nlohmann::json::parse(in)["tensors"]["model.layers.0.mlp.down_proj.weight"];
  const auto words = packed.as<int32_t>();
  const auto scales = scale.as<float>();
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(scales[r], ref["weight_scale_first_2_rows"][r].get<float>());
    for (size_t k = 0; k < 22; ++k)
      EXPECT_EQ(words[r * 22 + k], ref["weight_packed_first_2_rows"][r][k].get<int32_t>());
  }

  expect_error([&] { (void)packed.as<float>(); }, {"model.layers.0.mlp.down_proj.weight_packed",
                                                   dir + "/model.safetensors", "is I32, not F32"});
  expect_error(
      [&] { (void)file.tensor("model.layers.9.mlp.up_proj.weight_packed"); },
      {"no tensor named \"model.layers.9.mlp.up_proj.weight_packed\"", dir + "/model.safetensors"});
}

TEST(Safetensors, ParseFromMemoryMatchesTheFile) {
  const std::string path = fixtures_dir() + "/stories260K-hf-w4a16-ct/model.safetensors";
  const auto bytes = read_bytes(path);
  const auto parsed = SafetensorsFile::parse(bytes, "in-memory");
  const auto mapped = SafetensorsFile::open(path);
  ASSERT_EQ(parsed.tensors().size(), mapped.tensors().size());
  for (size_t i = 0; i < parsed.tensors().size(); ++i) {
    const auto& a = parsed.tensors()[i];
    const auto& b = mapped.tensors()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.file, "in-memory");
    EXPECT_EQ(a.data - parsed.tensors().front().data, b.data - mapped.tensors().front().data);
    ASSERT_EQ(a.bytes, b.bytes);
    EXPECT_EQ(std::memcmp(a.data, b.data, a.bytes), 0) << a.name;
  }
}

TEST(Safetensors, EveryDtypeScalarsEmptyTensorsAndMetadata) {
  ScratchDir dir;
  const std::vector<std::pair<std::string, size_t>> dtypes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"I64", 8}, {"U64", 8},     {"F64", 8}};
  std::vector<TestTensor> tensors = {
      {"scalar", "F64", {}, std::vector<uint8_t>(8, 1)}};  // first: aligned
  for (const auto& [name, size] : dtypes)
    tensors.push_back({"t_" + name, name, {8}, std::vector<uint8_t>(8 * size, 7)});
  tensors.push_back({"empty", "F32", {4, 0, 2}, {}});
  tensors.push_back({"also_empty", "BF16", {0}, {}});
  write_safetensors(dir.file("all.safetensors"), tensors, {{"format", "pt"}, {"note", "ünïcode"}});

  const auto file = SafetensorsFile::open(dir.file("all.safetensors"));
  EXPECT_EQ(file.metadata().at("note"), "ünïcode");
  for (const auto& [name, size] : dtypes) {
    const TensorView& t = file.tensor("t_" + name);
    EXPECT_EQ(dtype_name(t.dtype), name);
    EXPECT_EQ(dtype_size(t.dtype), size);
    EXPECT_EQ(t.numel(), 8);
    EXPECT_EQ(t.bytes, 8 * size);
  }
  EXPECT_EQ(file.tensor("scalar").numel(), 1);
  EXPECT_EQ(file.tensor("scalar").shape_string(), "[]");
  EXPECT_EQ(file.tensor("scalar").as<double>().size(), 1u);
  EXPECT_EQ(file.tensor("empty").numel(), 0);
  EXPECT_EQ(file.tensor("empty").shape_string(), "[4, 0, 2]");
  EXPECT_EQ(file.tensor("also_empty").as<uint16_t>(Dtype::BF16).size(), 0u);
  EXPECT_EQ(file.tensor("t_BF16").as<uint16_t>(Dtype::BF16).size(), 8u);
  EXPECT_EQ(file.tensor("t_I8").as<int8_t>()[2], 7);
  expect_error([&] { (void)file.tensor("t_F16").as<uint16_t>(); },
               {"\"t_F16\"", "is F16, not U16"});
  expect_error([&] { (void)file.tensor("t_F32").as<uint16_t>(Dtype::F32); },
               {"\"t_F32\"", "2-byte type"});
  EXPECT_EQ(dtype_from_name("F4"), std::nullopt);
}

TEST(Safetensors, EmptyFileWithNoTensors) {
  ScratchDir dir;
  write_file(dir.file("none.safetensors"), safetensors_bytes("{}      ", {}));
  const auto file = SafetensorsFile::open(dir.file("none.safetensors"));
  EXPECT_TRUE(file.tensors().empty());
  EXPECT_TRUE(file.metadata().empty());
}

TEST(Safetensors, UnalignedDataCannotBeViewedAsWiderTypes) {
  ScratchDir dir;
  const std::string header =
      R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";  // 55 bytes
  ASSERT_NE((8 + header.size()) % 4, 0u);
  write_file(dir.file("odd.safetensors"), safetensors_bytes(header, f32_bytes({1.0f, 2.0f})));
  const auto file = SafetensorsFile::open(dir.file("odd.safetensors"));
  expect_error([&] { (void)file.tensor("x").as<float>(); },
               {"\"x\"", dir.file("odd.safetensors"), "not aligned to 4"});
  EXPECT_EQ(file.tensor("x").bytes, 8u);
}

TEST(Safetensors, FileErrors) {
  ScratchDir dir;
  expect_error([&] { SafetensorsFile::open(dir.file("absent.safetensors")); },
               {"cannot open", dir.file("absent.safetensors"), "No such file"});
  expect_error([&] { SafetensorsFile::open(dir.path()); }, {dir.path(), "not a regular file"});
  write_file(dir.file("empty.safetensors"), "");
  expect_error([&] { SafetensorsFile::open(dir.file("empty.safetensors")); },
               {dir.file("empty.safetensors"), "file is 0 bytes"});
}

// One malformed file per case: the bytes, then what the message must name besides the path.
struct Malformed {
  std::string label;
  std::string bytes;
  std::vector<std::string> fragments;
};

std::string one_tensor(const std::string& entry, size_t data_bytes) {
  return safetensors_bytes(R"({"w":)" + entry + "}", std::vector<uint8_t>(data_bytes, 0));
}

std::vector<Malformed> malformed_cases() {
  const std::string ok = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string two_header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)";
  std::string huge_length(8, '\0');
  huge_length[4] = 1;  // 2^32
  std::string past_end = safetensors_bytes("{}", {});
  past_end[0] = 3;
  return {
      {"truncated",
       std::string("\x02\0\0\0", 4),
       {"file is 4 bytes, too short for the 8-byte header length"}},
      {"truncated_data",
       one_tensor(ok, 8).substr(0, 60),
       {"header length", "runs past the end of the file (60 bytes)"}},
      {"length_past_end", past_end, {"header length 3 runs past the end of the file (10 bytes)"}},
      {"length_huge",
       huge_length + "{}",
       {"header length 4294967296 exceeds the limit of 100000000 bytes"}},
      {"not_brace", safetensors_bytes(" {}", {}), {"header does not start with '{'"}},
      {"bad_json",
       safetensors_bytes(R"({"w":{"dtype":"F32",)", {}),
       {"header: not valid JSON", "parse error"}},
      {"non_object_json",
       safetensors_bytes(R"({"w":[1,2]})", {}),
       {"tensor \"w\": entry is array, not an object"}},
      {"trailing_json", safetensors_bytes(R"({} [])", {}), {"not valid JSON"}},
      {"bad_utf8",
       safetensors_bytes("{\"w\xff\":{}}", {}),
       {"not valid JSON", "UTF-8", "\"w\\xff"}},
      {"duplicate_tensor",
       safetensors_bytes(two_header + R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                         std::vector<uint8_t>(8, 0)),
       {"key \"a\" appears twice"}},
      {"missing_dtype",
       one_tensor(R"({"shape":[2],"data_offsets":[0,8]})", 8),
       {"tensor \"w\": missing field dtype"}},
      {"missing_shape",
       one_tensor(R"({"dtype":"F32","data_offsets":[0,8]})", 8),
       {"tensor \"w\": missing field shape"}},
      {"missing_offsets",
       one_tensor(R"({"dtype":"F32","shape":[2]})", 8),
       {"tensor \"w\": missing field data_offsets"}},
      {"unknown_field",
       one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1})", 8),
       {"tensor \"w\": unknown field \"extra\""}},
      {"unknown_dtype",
       one_tensor(R"({"dtype":"F4","shape":[2],"data_offsets":[0,8]})", 8),
       {"tensor \"w\": dtype \"F4\" is not supported"}},
      {"dtype_not_string",
       one_tensor(R"({"dtype":4,"shape":[2],"data_offsets":[0,8]})", 8),
       {"tensor \"w\": dtype is 4, not a string"}},
      {"shape_not_array",
       one_tensor(R"({"dtype":"F32","shape":2,"data_offsets":[0,8]})", 8),
       {"tensor \"w\": shape is 2, not an array"}},
      {"negative_shape",
       one_tensor(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})", 8),
       {"tensor \"w\": shape[0] is -2, not a non-negative integer"}},
      {"fractional_shape",
       one_tensor(R"({"dtype":"F32","shape":[2, 1.5],"data_offsets":[0,8]})", 8),
       {"tensor \"w\": shape[1] is 1.5, not a non-negative integer"}},
      {"shape_too_large",
       one_tensor(R"({"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8]})", 8),
       {"tensor \"w\": shape[0] = 9223372036854775808 is too large"}},
      {"size_mismatch",
       one_tensor(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})", 8),
       {"tensor \"w\": shape [3] of F32 is 12 bytes but data_offsets [0, 8] span 8"}},
      {"size_overflow",
       one_tensor(R"({"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]})", 8),
       {"tensor \"w\": shape [4294967296, 4294967296] of F64 overflows"}},
      {"offsets_not_pair",
       one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})", 8),
       {"tensor \"w\": data_offsets is array, not [begin, end]"}},
      {"negative_offset",
       one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[-8,0]})", 8),
       {"tensor \"w\": data_offsets[0] is -8, not a non-negative integer"}},
      {"out_of_bounds",
       one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[4,12]})", 8),
       {"tensor \"w\": data_offsets [4, 12] ends past the data region of 8 bytes"}},
      {"begin_after_end",
       one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[8,0]})", 8),
       {"tensor \"w\": data_offsets [8, 0] has begin > end"}},
      {"overlap",
       safetensors_bytes(two_header + R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                         std::vector<uint8_t>(12, 0)),
       {"tensor \"b\": data_offsets [4, 12] overlap tensor \"a\""}},
      {"gap",
       safetensors_bytes(two_header + R"("b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
                         std::vector<uint8_t>(20, 0)),
       {"tensor \"b\": data_offsets begin 12 leaves a gap of 4 unused bytes at offset 8"}},
      {"gap_at_start",
       one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[4,12]})", 12),
       {"tensor \"w\": data_offsets begin 4 leaves a gap of 4 unused bytes at offset 0"}},
      {"trailing_bytes", one_tensor(ok, 11), {"data region has 3 unused bytes after offset 8"}},
      {"metadata_not_object",
       safetensors_bytes(R"({"__metadata__":[]})", {}),
       {"__metadata__ is array, not an object"}},
      {"metadata_not_string",
       safetensors_bytes(R"({"__metadata__":{"format":1}})", {}),
       {"__metadata__ key \"format\" is 1, not a string"}},
  };
}

TEST(Safetensors, MalformedFilesNameTheFileAndField) {
  ScratchDir dir;
  for (const Malformed& m : malformed_cases()) {
    SCOPED_TRACE(m.label);
    const std::string path = dir.file(m.label + ".safetensors");
    write_file(path, m.bytes);
    try {
      SafetensorsFile::open(path);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("safetensors " + path + ": "), std::string::npos) << message;
      for (const auto& fragment : m.fragments)
        EXPECT_NE(message.find(fragment), std::string::npos)
            << "'" << message << "' lacks '" << fragment << "'";
    }
  }
}

}  // namespace
}  // namespace dq4::test
