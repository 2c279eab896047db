#include "dq4/kernels/int4_codec.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "dq4/kernels/error.h"

namespace dq4 {
namespace {

TEST(Int4Codec, RoundTripsEveryWidth) {
  std::mt19937 rng(5);
  for (int64_t cols : {1, 7, 8, 9, 16, 172}) {
    std::vector<int8_t> values(static_cast<size_t>(3 * cols));
    for (auto& v : values) v = static_cast<int8_t>(static_cast<int>(rng() % 16) - 8);
    std::vector<int32_t> words(static_cast<size_t>(3 * ((cols + 7) / 8)));
    pack_int4_rows(values.data(), 3, cols, words.data());
    std::vector<int8_t> back(values.size());
    unpack_int4_rows(words.data(), 3, cols, back.data());
    EXPECT_EQ(back, values) << cols;
  }
}

TEST(Int4Codec, PadsRowsWithZeroNibbles) {
  const int8_t values[] = {7, -8, 0};
  int32_t word = -1;
  pack_int4_rows(values, 1, 3, &word);
  EXPECT_EQ(word, 0x80f);  // u = 15, 0, 8; the five pad nibbles are 0
}

TEST(Int4Codec, RejectsOutOfRangeValues) {
  const int8_t values[] = {1, 2, 8};
  int32_t word;
  try {
    pack_int4_rows(values, 1, 3, &word);
    ADD_FAILURE() << "accepted 8";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("value[0][2] = 8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dq4
