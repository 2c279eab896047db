#pragma once
// compressed-tensors "pack-quantized" int4 encoding: row-major int32 words, 8 values per word,
// nibble = q + 8, column 8j + i in bits [4i, 4i + 3]; a row is padded with nibble 0 to a whole
// word.

#include <cstdint>

namespace dq4 {

// values [rows, cols] in [-8, 7] -> words [rows, ceil(cols / 8)]. Throws dq4::Error on a value
// outside [-8, 7], naming its row and column.
void pack_int4_rows(const int8_t* values, int64_t rows, int64_t cols, int32_t* words);

// words [rows, ceil(cols / 8)] -> values [rows, cols] (padding nibbles are dropped).
void unpack_int4_rows(const int32_t* words, int64_t rows, int64_t cols, int8_t* values);

}  // namespace dq4
