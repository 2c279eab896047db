// Known answers: the worked examples of shared/docs/checkpoint-format-and-math.md (§2.2, §6.5)
// and the compressed-tensors pack/unpack vectors in $DQ4_FIXTURES/compressed-tensors-pack-vectors.

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "dq4/kernels/int4_codec.h"
#include "w4a8_test_support.h"

namespace dq4::test {
namespace {

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(W4A8KnownAnswer, WorkedActivationExample) {
  const float x[] = {-1.0f, 0.5f, 2.0f, 0.0f};
  const w4a8::QuantizedRow row = w4a8::quantize_row(x, 4);
  EXPECT_EQ(row.zero_point, -43);
  EXPECT_EQ(bits(row.recip_scale), 0x3C40C0C1u);
  EXPECT_EQ(row.q, (std::vector<int8_t>{-128, 0, 127, -43}));
}

TEST(W4A8KnownAnswer, TiesRoundAwayFromZeroInTheVectorBodyToo) {
  // Range [-1, 2] gives mul = 85; 0.5 * 85 = 42.5 sits at k = 3 < 8 * floor(16 / 8), where
  // KleidiAI before v1.22 rounded to even (42). dq4 follows v1.22+: 43, so q = 43 - 43 = 0.
  float x[16] = {-1.0f, 2.0f, 0.0f, 0.5f, -0.5f, 1.5f};
  const w4a8::QuantizedRow row = w4a8::quantize_row(x, 16);
  EXPECT_EQ(row.zero_point, -43);
  EXPECT_EQ(row.q[3], 0);
  EXPECT_EQ(row.q[4], -43 - 43);  // -42.5 -> -43
  EXPECT_EQ(row.q[5], 128 - 43);  // 127.5 -> 128
}

TEST(W4A8KnownAnswer, WorkedChannelwiseOutputOnEveryKernel) {
  const float x[] = {-1.0f, 0.5f, 2.0f, 0.0f};
  const int8_t w[] = {1, -8, 7, 3};
  const float scale = 0.125f;
  for (const w4a8::Kernel* kernel : runnable_kernels()) {
    int4::WeightSource source;
    source.n = 1;
    source.k = 4;
    source.values = w;
    source.scales = &scale;
    const auto packed = w4a8::pack(source, *kernel);
    float y = 0;
    w4a8::MatmulArgs args;
    args.m = 1;
    args.x = x;
    args.ldx = 4;
    args.y = &y;
    args.ldy = 1;
    w4a8::matmul(packed, args);
    EXPECT_EQ(y, 1.11911762f) << w4a8::family().name(*kernel);  // U = 761; exact answer 1.125
  }
}

TEST(W4A8KnownAnswer, WorkedPackedWord) {
  const int8_t q[] = {-8, -1, 0, 7, 3, -3, 1, 2};
  int32_t word = 0;
  pack_int4_rows(q, 1, 8, &word);
  EXPECT_EQ(static_cast<uint32_t>(word), 0xA95BF870u);
  EXPECT_EQ(word, -1453590416);
}

nlohmann::json load_pack_vectors() {
  const char* dir = std::getenv("DQ4_FIXTURES");
  if (dir == nullptr) ADD_FAILURE() << "DQ4_FIXTURES is not set (point it at shared/fixtures)";
  const std::string path =
      std::string(dir ? dir : "") + "/compressed-tensors-pack-vectors/pack_vectors.json";
  std::ifstream in(path);
  if (!in) ADD_FAILURE() << "cannot open fixture " << path;
  return in ? nlohmann::json::parse(in) : nlohmann::json::object();
}

std::vector<int8_t> flatten_i8(const nlohmann::json& rows) {
  std::vector<int8_t> out;
  for (const auto& row : rows)
    for (const auto& v : row) out.push_back(static_cast<int8_t>(v.get<int>()));
  return out;
}

std::vector<int32_t> flatten_i32(const nlohmann::json& rows) {
  std::vector<int32_t> out;
  for (const auto& row : rows)
    for (const auto& v : row) out.push_back(static_cast<int32_t>(v.get<int64_t>()));
  return out;
}

TEST(W4A8KnownAnswer, CompressedTensorsPackVectors) {
  const nlohmann::json vectors = load_pack_vectors();
  ASSERT_TRUE(vectors.contains("pack_to_int32"));
  int checked = 0;
  for (const auto& c : vectors["pack_to_int32"]) {
    if (c["num_bits"] != 4) continue;  // dq4 is int4 only
    const auto values = flatten_i8(c["values"]);
    const int64_t rows = static_cast<int64_t>(c["values"].size());
    const int64_t cols = static_cast<int64_t>(c["values"][0].size());
    std::vector<int32_t> words(static_cast<size_t>(rows * ((cols + 7) / 8)));
    pack_int4_rows(values.data(), rows, cols, words.data());
    EXPECT_EQ(words, flatten_i32(c["expected_packed_int32"])) << c.dump();

    // Packing the kernel weights from either encoding gives the same bytes.
    std::vector<float> scales(static_cast<size_t>(rows), 1.0f);
    int4::WeightSource from_values;
    from_values.n = rows;
    from_values.k = cols;
    from_values.values = values.data();
    from_values.scales = scales.data();
    int4::WeightSource from_words = from_values;
    from_words.values = nullptr;
    from_words.packed = words.data();
    for (const w4a8::Kernel* kernel : runnable_kernels()) {
      const auto a = w4a8::pack(from_values, *kernel), b = w4a8::pack(from_words, *kernel);
      ASSERT_EQ(a.bytes(), b.bytes());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0) << w4a8::family().name(*kernel);
    }
    ++checked;
  }
  for (const auto& c : vectors["unpack_from_int32"]) {
    if (c["num_bits"] != 4) continue;
    const auto words = flatten_i32(c["packed_int32"]);
    const int64_t rows = c["shape"][0], cols = c["shape"][1];
    std::vector<int8_t> values(static_cast<size_t>(rows * cols));
    unpack_int4_rows(words.data(), rows, cols, values.data());
    EXPECT_EQ(values, flatten_i8(c["expected_values_int8"])) << c.dump();
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

}  // namespace
}  // namespace dq4::test
