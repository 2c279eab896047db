#pragma once
// The W4A16 rows of `dq4 bench kernels` (kind w4a16): the same int4 weights as the W4A8 rows,
// packed for one W4A16 kernel and timed on cold copies. The ratios to the machine references
// (prefill against the f32 FMA peak) are added by the caller.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/fixed_cost.h"
#include "bench/kernel_grid.h"
#include "bench/report.h"
#include "bench/test_weights.h"
#include "bench/timing.h"
#include "dq4/kernels/w4a16.h"

namespace dq4::cli::bench {

struct W4A16Bench {
  const w4a16::Kernel* kernel = nullptr;
  std::vector<int64_t> ms;
  std::vector<int> threads;
  TimingPlan plan;
  size_t cold_budget = 0;
  // Called before each case (progress output).
  std::function<void(const std::string& kind, int64_t m, int threads)> starting;
};

// The cases of one shape and group size for every M and thread count, with x [max M, k] and
// y [max M, n]. For M = 1 the per-call fixed cost is measured once per (k, group) into `fixed`.
std::vector<CaseResult> run_w4a16_cases(const W4A16Bench& bench, const Shape& s,
                                        const Int4Weights& weights, const float* x, float* y,
                                        std::map<std::pair<int64_t, int64_t>, FixedCost>& fixed);

}  // namespace dq4::cli::bench
