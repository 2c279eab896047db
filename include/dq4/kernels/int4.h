#pragma once
// Int4 weights as a checkpoint holds them (compressed-tensors int-quantized or pack-quantized,
// symmetric, one scale per output channel or per group of G along K): what the W4A8 and W4A16
// families pack (dq4/kernels/w4a8.h, dq4/kernels/w4a16.h) into their shared layout.

#include <cstdint>

namespace dq4::int4 {

enum class ScaleType { f32, bf16, f16 };

// Give exactly one of `values` or `packed`.
struct WeightSource {
  int64_t n = 0;                    // output channels (rows of W)
  int64_t k = 0;                    // input features
  int64_t group_size = 0;           // 0 or k: channelwise; else a multiple of 32, at most k
  const int8_t* values = nullptr;   // [n, k] int8 in [-8, 7] (compressed-tensors int-quantized)
  const int32_t* packed = nullptr;  // [n, ceil(k/8)] (pack-quantized: nibble q+8, LSB first)
  const void* scales = nullptr;     // [n, groups] of scale_type; groups = ceil(k / group_size)
  ScaleType scale_type = ScaleType::f32;
  const float* bias = nullptr;  // [n] or null
};

}  // namespace dq4::int4
