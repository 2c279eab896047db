#include "w4a8_test_support.h"

#include <cmath>
#include <cstring>
#include <random>

#include "dq4/kernels/int4_codec.h"
#include "matmul_case_args.h"
#include "runnable_kernels.h"

namespace dq4::test {
namespace {

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint32_t to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Exact for normal f16 values (the generator only makes those).
float f16_value(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  return from_bits(sign | ((exponent + 112) << 23) | (uint32_t{h & 0x3ffu} << 13));
}

float bf16_round(float f) {
  const uint32_t b = to_bits(f);
  return from_bits(((b + 0x7fffu + ((b >> 16) & 1u)) >> 16) << 16);
}

const char* rows_name(Rows r) {
  switch (r) {
    case Rows::random:
      return "random";
    case Rows::zero:
      return "zero";
    case Rows::constant:
      return "constant";
    case Rows::huge_range:
      return "huge";
    case Rows::ties:
      return "ties";
    case Rows::extremes:
      return "extremes";
  }
  return "?";
}

void fill_row(Rows kind, int64_t row, int64_t k, std::mt19937& rng, float* x) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  switch (kind) {
    case Rows::random: {
      const float scale = std::pow(10.0f, static_cast<float>(row % 5) - 2.0f);
      for (int64_t i = 0; i < k; ++i) x[i] = normal(rng) * scale;
      break;
    }
    case Rows::zero:
      for (int64_t i = 0; i < k; ++i) x[i] = 0.0f;
      break;
    case Rows::constant:
      for (int64_t i = 0; i < k; ++i) x[i] = row % 2 == 0 ? 0.37f : -2.5f;
      break;
    case Rows::huge_range: {
      // magnitudes from 1e-38 to 1e30; every third row spans +-3e38 (the range overflows to inf)
      for (int64_t i = 0; i < k; ++i) {
        const float magnitude =
            std::pow(10.0f, static_cast<float>(static_cast<int>(rng() % 69)) - 38.0f);
        x[i] = (rng() % 2 ? magnitude : -magnitude);
      }
      if (row % 3 == 0 && k >= 2) {
        x[0] = 3e38f;
        x[k - 1] = -3e38f;
      }
      break;
    }
    case Rows::extremes:  // q = -128 (even rows) or 127 (odd rows) but at one k
      for (int64_t i = 0; i < k; ++i) x[i] = (row % 2 == 0) == (i != k / 2) ? -1.0f : 1.0f;
      break;
    case Rows::ties: {
      // Range [-100, 155] gives mul = 1, so every half-integer lands exactly on a .5 tie;
      // odd rows use range [-1, 2] (mul = 85) with 0.5 * 85 = 42.5 and 1.5 * 85 = 127.5.
      if (row % 2 == 0) {
        for (int64_t i = 0; i < k; ++i)
          x[i] = static_cast<float>(static_cast<int>(rng() % 255) - 100) + 0.5f;
        // The floats just below a tie round toward zero; +-0.49999997 is the one where adding
        // exactly 0.5 before truncating would round up.
        const float below_ties[] = {0.49999997f, -0.49999997f, 42.4999962f, -42.4999962f};
        for (int64_t i = 0; i < 4 && 2 + 2 * i < k - 1; ++i) x[2 + 2 * i] = below_ties[i];
        x[0] = -100.0f;
        x[k - 1] = 155.0f;
      } else {
        const float grid[] = {-1.0f, 2.0f, 0.5f, -0.5f, 1.5f, 0.0f, 1.0f};
        for (int64_t i = 0; i < k; ++i) x[i] = grid[rng() % 7];
        x[0] = -1.0f;
        x[k - 1] = 2.0f;
      }
      break;
    }
  }
}

}  // namespace

std::string W4A8Case::name() const {
  std::string s = "m" + std::to_string(m) + "_n" + std::to_string(n) + "_k" + std::to_string(k) +
                  "_g" + std::to_string(group) + (bias ? "_bias" : "") + "_" + rows_name(rows);
  s += scale_type == int4::ScaleType::f32    ? "_f32"
       : scale_type == int4::ScaleType::bf16 ? "_bf16"
                                             : "_f16";
  s += input == Input::packed ? "_packed" : "_int8";
  if (lo > -3e38f || hi < 3e38f) s += "_clamp";
  if (ldx_pad || ldy_pad) s += "_strided";
  if (huge_scales) s += "_hugescales";
  if (std::signbit(lo) && lo == 0.0f) s += "_negzero";
  return s;
}

std::vector<W4A8Case> w4a8_cases() {
  using int4::ScaleType;
  struct Shape {
    int64_t n, k, group;
    bool bias;
    ScaleType scale_type;
    Input input;
  };
  const Shape shapes[] = {
      {67, 172, 0, true, ScaleType::f32, Input::values},      // channelwise, K % 32 != 0
      {13, 256, 256, false, ScaleType::bf16, Input::packed},  // G = K: channelwise
      {200, 96, 64, true, ScaleType::bf16, Input::values},    // partial last group (32 of 64)
      {37, 300, 128, true, ScaleType::f16, Input::packed},    // partial last group (44 of 128)
      {70, 200, 32, false, ScaleType::f32, Input::values},    // last group of 8
      {19, 8, 0, true, ScaleType::f32, Input::packed},        // tiny K
      {1, 33, 32, true, ScaleType::bf16, Input::values},      // one column, last group of 1
  };
  std::vector<int64_t> ms;
  for (int64_t m = 1; m <= 17; ++m) ms.push_back(m);
  for (int64_t m : {31, 64, 129, 257}) ms.push_back(m);

  std::vector<W4A8Case> cases;
  for (int64_t m : ms)
    for (const Shape& s : shapes)
      cases.push_back({m, s.n, s.k, s.group, s.bias, s.scale_type, s.input, Rows::random});
  // 13 rows: a decode batch in row blocks of unequal height (and, on some kernels, a 1-row tail).
  for (Rows rows : {Rows::zero, Rows::constant, Rows::huge_range, Rows::ties, Rows::extremes})
    for (int64_t m : {1, 5, 13, 17})
      for (int shape : {0, 2, 4}) {
        const Shape& s = shapes[shape];
        cases.push_back({m, s.n, s.k, s.group, s.bias, s.scale_type, s.input, rows});
      }
  W4A8Case clamped{9, 67, 172, 0, true, ScaleType::f32, Input::values, Rows::random, -0.05f, 0.02f};
  cases.push_back(clamped);
  clamped.group = 32;
  clamped.k = 200;
  clamped.scale_type = ScaleType::bf16;
  cases.push_back(clamped);
  // Clamp corner cases where max/min instructions differ from the defined (y > lo ? y : lo),
  // (y < hi ? y : hi): +0.0 outputs against lo = -0.0, and +-inf / NaN (0 * inf) before the clamp.
  cases.push_back({3, 67, 172, 0, false, ScaleType::f32, Input::values, Rows::zero, -0.0f, 1.0f});
  W4A8Case overflow{7,      67,   172, 0, false, ScaleType::f32, Input::values, Rows::random,
                    -1e30f, 1e30f};
  overflow.huge_scales = true;
  cases.push_back(overflow);
  overflow.rows = Rows::ties;
  cases.push_back(overflow);
  W4A8Case strided{6, 70, 200, 32, true, ScaleType::f32, Input::packed, Rows::random};
  strided.ldx_pad = 5;
  strided.ldy_pad = 3;
  cases.push_back(strided);
  strided.group = 0;
  cases.push_back(strided);
  // Decode batches over K of several chunks (the x86 kernels run 6-48 or 5-16 rows a chunk of K
  // at a time, 2-4 KiB of a panel's nibbles), the last chunk and the last group partial.
  for (int64_t m : {6, 13})
    for (int64_t group : {0, 32, 128})
      cases.push_back({m, 70, 1100, group, true, ScaleType::bf16, Input::values, Rows::random});
  // K past the bound up to which prefill kernels unpack a panel into scratch (avx512_vnni:
  // K <= 32768, avx2: K <= 16384), with enough rows for prefill (> 16): they must take their
  // plain path and agree all the same.
  for (int64_t group : {0, 128})
    cases.push_back({20, 70, 32800, group, true, ScaleType::bf16, Input::values, Rows::random});
  return cases;
}

W4A8Data make_data(const W4A8Case& c, uint32_t seed) {
  std::mt19937 rng(seed * 7919u + static_cast<uint32_t>(c.m * 31 + c.n * 17 + c.k));
  W4A8Data d;
  d.values.resize(static_cast<size_t>(c.n * c.k));
  for (auto& v : d.values) v = static_cast<int8_t>(static_cast<int>(rng() % 16) - 8);
  if (c.rows == Rows::extremes)  // -8 in even columns, 7 in odd ones
    for (int64_t i = 0; i < c.n * c.k; ++i) d.values[i] = (i / c.k) % 2 == 0 ? -8 : 7;
  d.packed.resize(static_cast<size_t>(c.n * ((c.k + 7) / 8)));
  pack_int4_rows(d.values.data(), c.n, c.k, d.packed.data());

  const int64_t groups = c.group == 0 ? 1 : (c.k + c.group - 1) / c.group;
  const size_t scale_count = static_cast<size_t>(c.n * groups);
  d.scales32.resize(scale_count);
  d.scales16.resize(scale_count);
  for (size_t i = 0; i < scale_count; ++i) {
    const uint32_t exponent = 5 + rng() % 9, mantissa = rng() % 1024;  // 2^-10 .. 2^-2
    const uint16_t f16 = static_cast<uint16_t>((exponent << 10) | mantissa);
    const float value = f16_value(f16) * (1.0f + static_cast<float>(rng() % 1000) * 1e-4f);
    switch (c.scale_type) {
      case int4::ScaleType::f16:
        d.scales16[i] = f16;
        break;
      case int4::ScaleType::bf16:
        d.scales16[i] = static_cast<uint16_t>(to_bits(value) >> 16);
        break;
      case int4::ScaleType::f32:
        d.scales32[i] = c.huge_scales ? 3.0e38f : value;
        break;
    }
  }
  std::normal_distribution<float> normal(0.0f, 0.5f);
  if (c.bias) {
    d.bias.resize(static_cast<size_t>(c.n));
    for (auto& b : d.bias) b = normal(rng);
  }
  d.ldx = c.k + c.ldx_pad;
  d.ldy = c.n + c.ldy_pad;
  d.x.assign(static_cast<size_t>(c.m * d.ldx), 12345.0f);  // padding is never read
  for (int64_t r = 0; r < c.m; ++r) fill_row(c.rows, r, c.k, rng, d.x.data() + r * d.ldx);
  return d;
}

int4::WeightSource W4A8Data::source(const W4A8Case& c) const {
  int4::WeightSource s;
  s.n = c.n;
  s.k = c.k;
  s.group_size = c.group;
  if (c.input == Input::values)
    s.values = values.data();
  else
    s.packed = packed.data();
  s.scale_type = c.scale_type;
  s.scales = c.scale_type == int4::ScaleType::f32 ? static_cast<const void*>(scales32.data())
                                                  : static_cast<const void*>(scales16.data());
  s.bias = c.bias ? bias.data() : nullptr;
  return s;
}

float W4A8Data::effective_scale(const W4A8Case& c, int64_t n, int64_t g) const {
  const int64_t groups = c.group == 0 || c.group == c.k ? 1 : (c.k + c.group - 1) / c.group;
  const size_t i = static_cast<size_t>(n * groups + g);
  float v = 0;
  switch (c.scale_type) {
    case int4::ScaleType::f16:
      v = f16_value(scales16[i]);
      break;
    case int4::ScaleType::bf16:
      v = from_bits(uint32_t{scales16[i]} << 16);
      break;
    case int4::ScaleType::f32:
      v = scales32[i];
      break;
  }
  return groups == 1 && (c.group == 0 || c.group == c.k) ? v : bf16_round(v);
}

std::vector<float> run_w4a8(const W4A8Case& c, const W4A8Data& d, const w4a8::Kernel& kernel,
                            ThreadPool& pool, const std::vector<float>* onto) {
  const w4a8::PackedWeights packed = w4a8::pack(d.source(c), kernel, &pool);
  std::vector<float> y = case_output(c, d, onto);
  w4a8::matmul(packed, case_args(c, d, y, onto != nullptr, pool));
  return y;
}

std::vector<const w4a8::Kernel*> runnable_kernels() { return supported_here(w4a8::family()); }

}  // namespace dq4::test
