#pragma once
// Test data for the W4A8 kernel family: one list of cases shared by the tests, generators for
// weights and activations (including the awkward rows), and a runner.

#include <cstdint>
#include <string>
#include <vector>

#include "dq4/kernels/thread_pool.h"
#include "dq4/kernels/w4a8.h"

namespace dq4::test {

// extremes: activations at the ends of the int8 range and weights at the ends of int4 (the
// largest sums the kernels' integer lanes must hold).
enum class Rows { random, zero, constant, huge_range, ties, extremes };
enum class Input { values, packed };

struct W4A8Case {
  int64_t m, n, k, group;  // group 0 = channelwise
  bool bias = false;
  int4::ScaleType scale_type = int4::ScaleType::f32;
  Input input = Input::values;
  Rows rows = Rows::random;
  float lo = -3.4028235e38f, hi = 3.4028235e38f;
  int64_t ldx_pad = 0, ldy_pad = 0;
  bool huge_scales =
      false;  // f32 scales near FLT_MAX: outputs overflow to +-inf (or NaN) before the clamp

  std::string name() const;
};

// The shared list: M = 1..17, 31, 64, 129, 257; N off the panel widths; K with partial groups
// and channelwise K = 172; G in {32, 64, 128, K}; bias; clamps; special rows; both encodings.
std::vector<W4A8Case> w4a8_cases();

// Weights and activations generated deterministically from the case.
struct W4A8Data {
  std::vector<int8_t> values;   // [n, k]
  std::vector<int32_t> packed;  // [n, ceil(k/8)]
  std::vector<uint16_t> scales16;
  std::vector<float> scales32;
  std::vector<float> bias;
  std::vector<float> x;  // [m, ldx]
  int64_t ldx = 0, ldy = 0;

  int4::WeightSource source(const W4A8Case& c) const;
  // The scale of row n, group g as the kernel sees it (f32; bf16-rounded when groupwise).
  float effective_scale(const W4A8Case& c, int64_t n, int64_t g) const;
};
W4A8Data make_data(const W4A8Case& c, uint32_t seed = 1);

// Runs pack + matmul with `kernel` on `pool`; returns y [m, ldy] (padding filled with a sentinel),
// or with `onto` ([m, ldy]) the matmul accumulated into a copy of it (MatmulArgs::accumulate).
std::vector<float> run_w4a8(const W4A8Case& c, const W4A8Data& d, const w4a8::Kernel& kernel,
                            ThreadPool& pool, const std::vector<float>* onto = nullptr);

// The kernels of this build that this CPU can run.
std::vector<const w4a8::Kernel*> runnable_kernels();

}  // namespace dq4::test
