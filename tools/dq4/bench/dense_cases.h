#pragma once
// The dense rows of `dq4 bench kernels` (kinds dense-bf16 and dense-f32): unquantized weights
// [n, k] packed for one dense kernel and timed on cold copies, like the W4A8 rows. The ratios to
// the machine references are added by the caller.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/kernel_grid.h"
#include "bench/report.h"
#include "bench/timing.h"
#include "dq4/kernels/aligned_buffer.h"
#include "dq4/kernels/dense.h"

namespace dq4::cli::bench {

struct DenseBench {
  const dense::Kernel* kernel = nullptr;
  std::vector<int64_t> ms;
  std::vector<int> threads;
  TimingPlan plan;
  size_t cold_budget = 0;
  // Called before each case (progress output).
  std::function<void(const std::string& kind, int64_t m, int threads)> starting;
};

// Finite weights [n, k] uniform in [-0.05, 0.05], as f32 (also the OpenBLAS baseline's operand);
// deterministic in (n, k, seed).
AlignedBuffer random_dense_weights(int64_t n, int64_t k, uint64_t seed);

// The cases of `kind` ("dense-bf16": the weights rounded to bf16; "dense-f32") for every M and
// thread count, with x [max M, k] and y [max M, n].
std::vector<CaseResult> run_dense_cases(const DenseBench& bench, const std::string& kind,
                                        const Shape& s, const AlignedBuffer& weights,
                                        const float* x, float* y);

}  // namespace dq4::cli::bench
