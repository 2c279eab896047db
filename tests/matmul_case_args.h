#pragma once
// What every family's test runner hands its matmul: a case's output rows (a poisoned buffer, or
// a copy of `onto` when the product is added to it) and the arguments that write them.

#include <cstdint>
#include <vector>

#include "dq4/kernels/matmul_args.h"
#include "dq4/kernels/thread_pool.h"

namespace dq4::test {

// The case's m rows of d.ldy floats: a copy of *onto, or -777 where nothing may stay unwritten.
template <class Case, class Data>
std::vector<float> case_output(const Case& c, const Data& d, const std::vector<float>* onto) {
  return onto != nullptr ? *onto : std::vector<float>(static_cast<size_t>(c.m * d.ldy), -777.0f);
}

// The arguments of the case's product of d.x into y, clamped to [c.lo, c.hi].
template <class Case, class Data>
MatmulArgs case_args(const Case& c, const Data& d, std::vector<float>& y, bool accumulate,
                     ThreadPool& pool) {
  MatmulArgs args;
  args.m = c.m;
  args.x = d.x.data();
  args.ldx = d.ldx;
  args.y = y.data();
  args.ldy = d.ldy;
  args.min = c.lo;
  args.max = c.hi;
  args.accumulate = accumulate;
  args.pool = &pool;
  return args;
}

}  // namespace dq4::test
