#pragma once
// Symmetric int4 round-to-nearest quantization of a weight matrix exactly as compressed-tensors
// computes it (shared/docs/checkpoint-format-and-math.md §2.4), per output channel or per group of
// G columns (a partial last group when G does not divide K):
//
//   absmax = max |w| over the row or group (0 included)
//   scale  = to_dtype(absmax / 7.5), and finfo(dtype).eps where that is 0
//   q      = clamp(round_half_even(to_dtype(w / scale)), -8, 7)
//
// where to_dtype rounds an f32 result to the weight's dtype (BF16, F16: nearest even; F32: exact)
// as torch does for arithmetic on 16-bit float tensors. Scales keep the weight's dtype.

#include <cstdint>
#include <vector>

#include "dq4/io/tensor_view.h"

namespace dq4 {

class ThreadPool;

// Scale columns: 1 when channelwise (group_size 0), else ceil(cols / group_size).
int64_t rtn_groups(int64_t cols, int64_t group_size);

// finfo(dtype).eps of a float dtype: BF16 2^-7, F16 2^-10, F32 2^-23.
float dtype_epsilon(Dtype dtype);

struct RtnResult {
  int64_t rows = 0, cols = 0, groups = 0;
  std::vector<int8_t> values;   // [rows, cols] in [-8, 7]
  std::vector<uint8_t> scales;  // [rows, groups] in the weight's dtype, little-endian
};

// Quantizes rows [row_begin, row_end) of `weight` (F32, BF16 or F16 [rows, cols]) into
// values [row_end - row_begin, cols] and scales [row_end - row_begin, groups]. Throws dq4::Error
// naming the tensor and its file for another dtype or shape, and the row and column of a NaN or
// infinite weight. With values == nullptr only the scales are computed.
void rtn_quantize_rows(const TensorView& weight, int64_t group_size, int64_t row_begin,
                       int64_t row_end, int8_t* values, uint8_t* scales);

// The whole matrix, rows split over `pool` (default: the global pool).
RtnResult rtn_quantize(const TensorView& weight, int64_t group_size, ThreadPool* pool = nullptr);
// The scales alone (values left empty): one pass of absolute maxima, no division.
RtnResult rtn_scales(const TensorView& weight, int64_t group_size, ThreadPool* pool = nullptr);

}  // namespace dq4
