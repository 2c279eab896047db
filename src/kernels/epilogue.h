#pragma once
// The last step of every matmul kernel, for each output value v (the family's math, bias
// included): c = min(max(v, lo), hi) in the reference's (v > lo ? v : lo) sense, then
//   y = c        (stored), or
//   y = y + c    (accumulated into what y holds: MatmulArgs::accumulate),
// the same single f32 add a separate pass after the matmul would make, so that a residual added
// in the epilogue gives that pass's bits.

#include "dq4/kernels/matmul_args.h"

namespace dq4::kernels {

struct Epilogue {
  float lo, hi;
  bool accumulate;
};

inline Epilogue epilogue_of(const MatmulArgs& args) {
  return {args.min, args.max, args.accumulate};
}

// Writes the clamped value c to *y as `e` says (scalar code and the tails of vector stores).
inline __attribute__((always_inline)) void write_output(float* y, float c, const Epilogue& e) {
  *y = e.accumulate ? *y + c : c;
}

}  // namespace dq4::kernels
