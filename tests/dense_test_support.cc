#include "dense_test_support.h"

#include <cmath>
#include <cstring>
#include <random>

#include "matmul_case_args.h"
#include "runnable_kernels.h"

namespace dq4::test {
namespace {

using dense::WeightType;

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Exact for normal and zero f16 values (the generator makes only those).
float f16_value(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  if (exponent == 0) return from_bits(sign);
  return from_bits(sign | ((exponent + 112) << 23) | (uint32_t{h & 0x3ffu} << 13));
}

const char* type_name(WeightType t) {
  switch (t) {
    case WeightType::f32:
      return "f32";
    case WeightType::bf16:
      return "bf16";
    case WeightType::f16:
      return "f16";
  }
  return "?";
}

// A random weight as the bits of `type`: magnitudes 2^-6 .. 2^2, some exact zeros; with `huge`,
// magnitudes near 2^100 so that products overflow f32.
uint32_t random_weight_bits(WeightType type, bool huge, std::mt19937& rng) {
  if (rng() % 16 == 0) return 0;
  const uint32_t sign = rng() % 2;
  switch (type) {
    case WeightType::bf16:
      return (sign << 15) | ((huge ? 227 : 121 + rng() % 8) << 7) | (rng() % 128);
    case WeightType::f16:
      return (sign << 15) | ((9 + rng() % 8) << 10) | (rng() % 1024);
    case WeightType::f32:
      return (sign << 31) | ((huge ? 227 : 121 + rng() % 8) << 23) | (rng() % (1u << 23));
  }
  return 0;
}

}  // namespace

std::string DenseCase::name() const {
  std::string s = "m" + std::to_string(m) + "_n" + std::to_string(n) + "_k" + std::to_string(k) +
                  "_" + type_name(type) + (bias ? "_bias" : "");
  if (rows == DenseRows::zero) s += "_zero";
  if (rows == DenseRows::huge) s += "_huge";
  if (lo > -3e38f || hi < 3e38f) s += "_clamp";
  if (std::signbit(lo) && lo == 0.0f) s += "_negzero";
  if (ldx_pad || ldy_pad) s += "_strided";
  return s;
}

std::vector<DenseCase> dense_cases() {
  struct Shape {
    int64_t n, k;
    WeightType type;
    bool bias;
  };
  const Shape shapes[] = {
      {67, 172, WeightType::bf16, true},    // N off every panel width
      {13, 255, WeightType::bf16, false},   // K odd
      {200, 96, WeightType::f32, true},     // several panels everywhere
      {37, 1, WeightType::bf16, true},      // K = 1
      {1, 33, WeightType::f32, false},      // one column
      {21, 1101, WeightType::bf16, false},  // K odd and longer than every K block
      {19, 600, WeightType::f32, true},     // K longer than every f32 K block
      {9, 301, WeightType::f16, true},      // f16, widened to f32
      {70, 320, WeightType::bf16, true},    // K a multiple of 32: whole AMX-BF16 tiles
  };
  std::vector<int64_t> ms;
  for (int64_t m = 1; m <= 17; ++m) ms.push_back(m);
  for (int64_t m : {31, 64, 129, 257}) ms.push_back(m);

  std::vector<DenseCase> cases;
  for (int64_t m : ms)
    for (const Shape& s : shapes) cases.push_back({m, s.n, s.k, s.type, s.bias});
  for (DenseRows rows : {DenseRows::zero, DenseRows::huge})
    for (int64_t m : {1, 5, 17})
      for (int shape : {0, 1, 2}) {
        const Shape& s = shapes[shape];
        cases.push_back({m, s.n, s.k, s.type, s.bias, rows});
      }
  for (int64_t m : {1, 9})
    for (int shape : {0, 2}) {
      const Shape& s = shapes[shape];
      cases.push_back({m, s.n, s.k, s.type, s.bias, DenseRows::random, -0.05f, 0.02f});
    }
  // +0.0 outputs against lo = -0.0: the clamp is (y > lo ? y : lo), not a signed-zero max.
  cases.push_back({3, 67, 172, WeightType::bf16, false, DenseRows::zero, -0.0f, 1.0f});
  DenseCase overflow{7, 67, 172, WeightType::bf16, true, DenseRows::huge, -1e30f, 1e30f};
  cases.push_back(overflow);
  for (int64_t m : {2, 6}) {
    DenseCase strided{m, 70, 201, WeightType::bf16, true};
    strided.ldx_pad = 5;
    strided.ldy_pad = 3;
    cases.push_back(strided);
    strided.type = WeightType::f32;
    cases.push_back(strided);
  }
  return cases;
}

DenseData make_dense_data(const DenseCase& c, uint32_t seed) {
  std::mt19937 rng(seed * 7919u + static_cast<uint32_t>(c.m * 31 + c.n * 17 + c.k));
  DenseData d;
  const size_t count = static_cast<size_t>(c.n * c.k);
  const bool huge = c.rows == DenseRows::huge;
  if (c.type == WeightType::f32) {
    d.w32.resize(count);
    for (float& w : d.w32) w = from_bits(random_weight_bits(c.type, huge, rng));
  } else {
    d.w16.resize(count);
    for (uint16_t& w : d.w16) w = static_cast<uint16_t>(random_weight_bits(c.type, huge, rng));
  }
  std::normal_distribution<float> normal(0.0f, 1.0f);
  if (c.bias) {
    d.bias.resize(static_cast<size_t>(c.n));
    for (float& b : d.bias) b = 0.5f * normal(rng);
  }
  d.ldx = c.k + c.ldx_pad;
  d.ldy = c.n + c.ldy_pad;
  d.x.assign(static_cast<size_t>(c.m * d.ldx), 12345.0f);  // padding is never read
  for (int64_t r = 0; r < c.m; ++r) {
    float* row = d.x.data() + r * d.ldx;
    const float scale = std::pow(10.0f, static_cast<float>(r % 5) - 2.0f);
    for (int64_t k = 0; k < c.k; ++k) {
      switch (c.rows) {
        case DenseRows::random:
          row[k] = normal(rng) * scale;
          break;
        case DenseRows::zero:
          row[k] = 0.0f;
          break;
        case DenseRows::huge:
          row[k] = normal(rng) * 1e30f;
          break;
      }
    }
  }
  return d;
}

dense::WeightSource DenseData::source(const DenseCase& c) const {
  dense::WeightSource s;
  s.n = c.n;
  s.k = c.k;
  s.type = c.type;
  s.data = c.type == WeightType::f32 ? static_cast<const void*>(w32.data())
                                     : static_cast<const void*>(w16.data());
  s.bias = c.bias ? bias.data() : nullptr;
  return s;
}

float DenseData::weight(const DenseCase& c, int64_t n, int64_t k) const {
  const size_t i = static_cast<size_t>(n * c.k + k);
  switch (c.type) {
    case WeightType::f32:
      return w32[i];
    case WeightType::bf16:
      return from_bits(uint32_t{w16[i]} << 16);
    case WeightType::f16:
      return f16_value(w16[i]);
  }
  return 0;
}

std::vector<float> run_dense(const DenseCase& c, const DenseData& d, const dense::Kernel& kernel,
                             ThreadPool& pool, const std::vector<float>* onto) {
  const dense::PackedWeights packed = dense::pack(d.source(c), kernel, &pool);
  std::vector<float> y = case_output(c, d, onto);
  dense::matmul(packed, case_args(c, d, y, onto != nullptr, pool));
  return y;
}

ExactOutput exact_output(const DenseCase& c, const DenseData& d, int64_t m, int64_t n) {
  ExactOutput out;
  const float* x = d.x.data() + m * d.ldx;
  for (int64_t k = 0; k < c.k; ++k) {
    const double w = d.weight(c, n, k);
    out.value += static_cast<double>(x[k]) * w;
    out.magnitude += std::fabs(static_cast<double>(x[k]) * w);
    out.weight_sum += std::fabs(w);
  }
  if (c.bias) out.value += d.bias[static_cast<size_t>(n)];
  return out;
}

std::vector<const dense::Kernel*> runnable_dense_kernels() {
  return supported_here(dense::family());
}

}  // namespace dq4::test
