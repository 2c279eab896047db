#pragma once
// Conversions between f32 and the 16-bit float formats checkpoints store scales in.

#include <cstdint>
#include <cstring>

namespace dq4::w4a8 {

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

}  // namespace dq4::w4a8
