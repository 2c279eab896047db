#pragma once
// Conversions between f32 and the 16-bit float formats of checkpoints, rounding to nearest even
// as torch does when it stores an f32 result in a bf16 or f16 tensor.

#include <cstdint>
#include <cstring>

namespace dq4 {

inline float bits_to_f32(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint32_t f32_to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

inline float bf16_to_f32(uint16_t v) { return bits_to_f32(uint32_t{v} << 16); }

// IEEE binary16 -> f32, exact (subnormals, infinities and NaN included).
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_to_f32(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return bits_to_f32(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return bits_to_f32(sign);
  int shift = 0;  // subnormal: normalise
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    ++shift;
  }
  return bits_to_f32(sign | ((113 - shift) << 23) | ((mantissa & 0x3ffu) << 13));
}

// f32 -> bf16 rounding to nearest, ties to even. The caller rejects NaN beforehand.
inline uint16_t f32_to_bf16(float f) {
  const uint32_t bits = f32_to_bits(f);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

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

}  // namespace dq4
