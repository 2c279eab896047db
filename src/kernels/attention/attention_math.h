#pragma once
// The scalar definition of the math attention.h states, which every variant reproduces with its
// own instructions: exp_approx() (one fixed sequence of float operations, so that a SIMD lane
// computes what the scalar code computes) and the 16-lane tree reduction.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernel.h"

namespace dq4::attention {

// Below kExpMin, exp_approx() is 0 (e^-87 is near the smallest normal float).
constexpr float kExpMin = -87.0f;
constexpr float kLog2e = 0x1.715476p+0f;
// ln 2 = kLn2Hi + kLn2Lo; kLn2Hi has few enough bits that n * kLn2Hi is exact for |n| <= 126.
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
// e^r on [-ln2 / 2, ln2 / 2] in Horner form, highest degree first (Cephes expf's minimax
// coefficients with the exact 1 + r tail).
constexpr float kExpPoly[] = {1.9875691500e-4f,
                              1.3981999507e-3f,
                              8.3334519073e-3f,
                              4.1665795894e-2f,
                              1.6666665459e-1f,
                              5.0000001201e-1f,
                              1.0f,
                              1.0f};

// e^x for x <= 0 (a relative error of a few ulp), exactly as every variant computes it:
//   c = max(x, kExpMin);  n = c * kLog2e rounded to the nearest integer, ties to even;
//   r = fma(n, -kLn2Hi, c);  r = fma(n, -kLn2Lo, r);
//   y = kExpPoly[0];  y = fma(y, r, kExpPoly[i]) for i = 1 .. 7;
//   result = x < kExpMin ? 0 : y * 2^n  (2^n built from its exponent bits; n >= -126).
DQ4_ATTENTION_INLINE float exp_approx(float x) {
  const float c = x > kExpMin ? x : kExpMin;
  const float n = std::nearbyint(c * kLog2e);
  float r = std::fma(n, -kLn2Hi, c);
  r = std::fma(n, -kLn2Lo, r);
  float y = kExpPoly[0];
  for (int i = 1; i < 8; ++i) y = std::fma(y, r, kExpPoly[i]);
  const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  float two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  return x < kExpMin ? 0.0f : y * two_n;
}

// Gemma 2's attention logit soft-capping, cap * tanh(s / cap): every variant calls this scalar
// function on its scores (std::tanh, one libm for all of them), so they stay bit-identical.
DQ4_ATTENTION_INLINE float soft_cap(float s, float cap) { return cap * std::tanh(s / cap); }

// The tree attention.h reduces 16 lane sums with: t8[l] = s[l] + s[l + 8], t4[l] = t8[l] +
// t8[l + 4], t2[l] = t4[l] + t4[l + 2], result t2[0] + t2[1].
DQ4_ATTENTION_INLINE float reduce16(const float* s) {
  float t8[8], t4[4];
  for (int l = 0; l < 8; ++l) t8[l] = s[l] + s[l + 8];
  for (int l = 0; l < 4; ++l) t4[l] = t8[l] + t8[l + 4];
  return (t4[0] + t4[2]) + (t4[1] + t4[3]);
}

}  // namespace dq4::attention
