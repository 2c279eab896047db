#pragma once
// Test data for the dense kernel family: one list of cases shared by the tests, generators for
// weights and activations, a runner and the exact (f64) product to judge accuracy by.

#include <cstdint>
#include <string>
#include <vector>

#include "dq4/kernels/dense.h"
#include "dq4/kernels/thread_pool.h"

namespace dq4::test {

enum class DenseRows { random, zero, huge };

struct DenseCase {
  int64_t m, n, k;
  dense::WeightType type = dense::WeightType::bf16;
  bool bias = false;
  DenseRows rows = DenseRows::random;
  float lo = -3.4028235e38f, hi = 3.4028235e38f;
  int64_t ldx_pad = 0, ldy_pad = 0;

  std::string name() const;
};

// The shared list: M = 1..17, 31, 64, 129, 257; N off every panel width; K odd, tiny and longer
// than every variant's K block; f32, bf16 and f16 weights; bias; clamps; strides; zero rows and
// values that overflow to infinity.
std::vector<DenseCase> dense_cases();

struct DenseData {
  std::vector<uint16_t> w16;  // [n, k] bf16 or f16 bits
  std::vector<float> w32;     // [n, k]
  std::vector<float> bias;
  std::vector<float> x;  // [m, ldx]
  int64_t ldx = 0, ldy = 0;

  dense::WeightSource source(const DenseCase& c) const;
  // Weight [n][k] as f32 (exact for every type).
  float weight(const DenseCase& c, int64_t n, int64_t k) const;
};
DenseData make_dense_data(const DenseCase& c, uint32_t seed = 1);

// Runs pack + matmul with `kernel` on `pool`; returns y [m, ldy] (padding filled with a sentinel),
// or with `onto` ([m, ldy]) the matmul accumulated into a copy of it (MatmulArgs::accumulate).
std::vector<float> run_dense(const DenseCase& c, const DenseData& d, const dense::Kernel& kernel,
                             ThreadPool& pool, const std::vector<float>* onto = nullptr);

// sum_k x w + bias in f64, and sum_k |x w| (for error bounds), for output (m, n).
struct ExactOutput {
  double value = 0, magnitude = 0, weight_sum = 0;  // weight_sum: sum_k |w|
};
ExactOutput exact_output(const DenseCase& c, const DenseData& d, int64_t m, int64_t n);

// The dense kernels of this build that this CPU can run.
std::vector<const dense::Kernel*> runnable_dense_kernels();

}  // namespace dq4::test
