#include <string>

#include "dq4/error.h"
#include "dq4/int4_codec.h"

namespace dq4 {

void pack_int4_rows(const int8_t* values, int64_t rows, int64_t cols, int32_t* words) {
  const int64_t words_per_row = (cols + 7) / 8;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t w = 0; w < words_per_row; ++w) {
      uint32_t word = 0;
      for (int64_t i = 0; i < 8 && w * 8 + i < cols; ++i) {
        const int8_t q = values[r * cols + w * 8 + i];
        if (q < -8 || q > 7)
          throw Error("pack_int4_rows: value[" + std::to_string(r) + "][" +
                      std::to_string(w * 8 + i) + "] = " + std::to_string(q) +
                      " is outside [-8, 7]");
        word |= static_cast<uint32_t>(q + 8) << (4 * i);
      }
      words[r * words_per_row + w] = static_cast<int32_t>(word);
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
