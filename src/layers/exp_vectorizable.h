#pragma once
// exp for the element-wise ops (SwiGLU's gate, softmax weights): straight-line code the compiler
// vectorizes, where std::exp is a call per element.

#include <bit>
#include <cstdint>
#include <limits>

// One clone of a loop over exp_vectorizable per x86 vector width, chosen at load by the CPU
// (bit-identical results: the build has -ffp-contract=off).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DQ4_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DQ4_VECTOR_CLONES
#endif

namespace dq4::ops {

// exp(x) within ~2 ulp for x in [-87, 88], 0 below it, infinity above it (NaN passes through):
// x = n ln2 + r with |r| <= ln2 / 2, exp(r) by Cephes' expf polynomial, 2^n built in the
// exponent bits. exp(0) is exactly 1.
inline float exp_vectorizable(float x_in) {
  float x = x_in < -87.0f ? -87.0f : x_in;
  x = x > 88.0f ? 88.0f : x;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to the nearest integer
  const float t = x * 1.44269504088896341f + kRound;
  const float n = t - kRound;
  // ln2 = 0.693359375 - 2.12194440e-4; n * 0.693359375 is exact for |n| < 2^15.
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = (p * (r * r) + r) + 1.0f;
  // t's low mantissa bits hold n + 2^22: n + 127 in the exponent field is 2^n (-126 <= n <= 127).
  const uint32_t two_n = (std::bit_cast<uint32_t>(t) - 0x4B400000u + 127u) << 23;
  const float e = p * std::bit_cast<float>(two_n);
  if (x_in < -87.0f) return 0.0f;
  return x_in > 88.0f ? std::numeric_limits<float>::infinity() : e;
}

}  // namespace dq4::ops
