#pragma once
// The part of a matmul() call that does not grow with the weights: quantizing the activation
// rows (W4A8; W4A16 checks that they are finite), argument checks and dispatch. No public API runs
// the kernel's quantization alone, so it is measured as matmul() on hot weights of 1 and of 128
// output channels, extrapolated linearly in packed-weight bytes to zero weights.

#include <cstdint>

#include "dq4/kernels/w4a16.h"
#include "dq4/kernels/w4a8.h"

namespace dq4::cli::bench {

struct FixedCost {
  double seconds = 0;       // extrapolated to zero weights (clamped to [0, one_column_s])
  double one_column_s = 0;  // the measured call with one output channel: an upper bound
};

// For `m` rows of length k (x: [m, k]) with group size `group`, on `threads` threads.
FixedCost fixed_call_cost(const w4a8::Kernel& kernel, int64_t k, int64_t group, const float* x,
                          int64_t m, int threads);
FixedCost fixed_call_cost(const w4a16::Kernel& kernel, int64_t k, int64_t group, const float* x,
                          int64_t m, int threads);

}  // namespace dq4::cli::bench
