#pragma once
// The arguments of every kernel family's matmul(): Y[m, n] = clamp(f(X[m, k], packed W), min, max).

#include <cfloat>
#include <cstdint>

namespace dq4 {

class ThreadPool;

struct MatmulArgs {
  int64_t m = 0;
  const float* x = nullptr;  // [m, k], row stride ldx >= k
  int64_t ldx = 0;
  float* y = nullptr;  // [m, n], row stride ldy >= n; must not overlap x
  int64_t ldy = 0;
  float min = -FLT_MAX;  // output clamp
  float max = FLT_MAX;
  ThreadPool* pool = nullptr;  // default: the global pool
  int max_threads = 0;         // 0: all threads of the pool
};

}  // namespace dq4
