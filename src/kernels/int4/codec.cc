#include <algorithm>
#include <cstring>
#include <string>

#include "dq4/kernels/error.h"
#include "dq4/kernels/int4_codec.h"

namespace dq4 {

namespace {

// The nibble q + 8 of each byte of eight int8 values in [-8, 7] (read little-endian), packed into
// one word, value i in bits [4i, 4i + 3]. For such q, (q ^ 8) & 15 == q + 8.
uint32_t pack_eight(uint64_t bytes) {
  uint64_t x = (bytes ^ 0x0808080808080808ull) & 0x0f0f0f0f0f0f0f0full;
  x = (x | x >> 4) & 0x00ff00ff00ff00ffull;  // byte pairs
  x = (x | x >> 8) & 0x0000ffff0000ffffull;
  return static_cast<uint32_t>(x | x >> 16);
}

}  // namespace

void pack_int4_rows(const int8_t* values, int64_t rows, int64_t cols, int32_t* words) {
  const int64_t words_per_row = (cols + 7) / 8, full_words = cols / 8;
  for (int64_t r = 0; r < rows; ++r) {
    const int8_t* row = values + r * cols;
    uint8_t outside = 0;  // an integer flag, branch-free: the check vectorizes
    for (int64_t c = 0; c < cols; ++c) outside |= static_cast<uint8_t>(row[c] + 8) > 15;
    if (outside != 0) {
      const int64_t c =
          std::find_if(row, row + cols, [](int8_t q) { return q < -8 || q > 7; }) - row;
      throw Error("pack_int4_rows: value[" + std::to_string(r) + "][" + std::to_string(c) +
                  "] = " + std::to_string(row[c]) + " is outside [-8, 7]");
    }
    int32_t* out = words + r * words_per_row;
    for (int64_t w = 0; w < full_words; ++w) {
      uint64_t bytes;
      std::memcpy(&bytes, row + 8 * w, 8);
      out[w] = static_cast<int32_t>(pack_eight(bytes));
    }
    if (full_words < words_per_row) {  // a partial last word: padding nibbles are 0
      uint32_t word = 0;
      for (int64_t c = 8 * full_words; c < cols; ++c)
        word |= static_cast<uint32_t>(row[c] + 8) << (4 * (c % 8));
      out[full_words] = static_cast<int32_t>(word);
    }
  }
}

void unpack_int4_rows(const int32_t* words, int64_t rows, int64_t cols, int8_t* values) {
  const int64_t words_per_row = (cols + 7) / 8;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const uint32_t word = static_cast<uint32_t>(words[r * words_per_row + c / 8]);
      values[r * cols + c] =
          static_cast<int8_t>(static_cast<int32_t>((word >> (4 * (c % 8))) & 0xfu) - 8);
    }
}

}  // namespace dq4
