#pragma once
// f32 <-> the 16-bit float formats of checkpoints, rounding to nearest even as torch does when it
// stores an f32 result in a bf16 or f16 tensor.

#include <cstdint>

#include "../kernels/w4a8/half.h"

namespace dq4::quant {

using w4a8::bf16_to_f32;
using w4a8::bits_to_f32;
using w4a8::f16_to_f32;
using w4a8::f32_to_bf16;
using w4a8::f32_to_bits;

// f32 -> IEEE binary16, nearest even, subnormals and overflow to infinity included.
inline uint16_t f32_to_f16(float f) {
  uint32_t x = f32_to_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return sign | 0x7c00u | (x > 0x7f800000u ? 0x200u : 0u);  // Inf, NaN
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // at least 65520: rounds to infinity
  if (x < 0x38800000u) {                        // below 2^-14: a subnormal half (or zero)
    // Scaling by 2^24 is exact; adding and removing 2^23 rounds to an integer, nearest even.
    const float units = bits_to_f32(x) * 16777216.0f;
    const float rounded = (units + 8388608.0f) - 8388608.0f;
    return sign | static_cast<uint16_t>(rounded);  // 1024 is the smallest normal, as bits
  }
  const uint32_t odd = (x >> 13) & 1u;
  x += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + odd;  // rebias, round the 13 low bits
  return sign | static_cast<uint16_t>(x >> 13);
}

inline float round_to_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }
inline float round_to_f16(float f) { return f16_to_f32(f32_to_f16(f)); }

}  // namespace dq4::quant
