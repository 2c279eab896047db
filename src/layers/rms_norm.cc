// RMSNorm of rows (dq4/ops.h).

#include <algorithm>
#include <cmath>

#include "dq4/layers/ops.h"
#include "exp_vectorizable.h"

namespace dq4::ops {
namespace {

// Rows whose sums of squares run side by side, one per lane: one row's sum is a chain of
// dependent double adds, so a single row waits on the add's latency at every element.
constexpr int64_t kRowsTogether = 8;

using Floats8 = float __attribute__((vector_size(32)));
using Doubles8 = double __attribute__((vector_size(64)));

// sums[j] = sum over i of x[j][i]^2 in double, in order of i, for kRowsTogether rows: 8 x 8
// blocks transposed so that column i of the 8 rows is one vector, and s[j] += v[j]^2 is
// element-wise (each row's sum still takes its squares in order).
DQ4_VECTOR_CLONES
void sums_of_squares(const float* x, int64_t cols, int64_t ldx, double* sums) {
  Doubles8 s = {};
  int64_t i0 = 0;
  for (; i0 + 8 <= cols; i0 += 8) {
    Doubles8 d[8];
    for (int j = 0; j < 8; ++j) {
      Floats8 f;
      __builtin_memcpy(&f, x + j * ldx + i0, sizeof f);
      d[j] = __builtin_convertvector(f, Doubles8);
    }
    Doubles8 t[8], u[8], c[8];
    for (int j = 0; j < 8; j += 2) {  // pairs of rows: even columns, odd columns
      t[j] = __builtin_shufflevector(d[j], d[j + 1], 0, 8, 2, 10, 4, 12, 6, 14);
      t[j + 1] = __builtin_shufflevector(d[j], d[j + 1], 1, 9, 3, 11, 5, 13, 7, 15);
    }
    for (int j = 0; j < 8; j += 4)  // quads of rows: columns 0 4, 2 6, 1 5, 3 7
      for (int o = 0; o < 2; ++o) {
        u[j + o] = __builtin_shufflevector(t[j + o], t[j + 2 + o], 0, 1, 8, 9, 4, 5, 12, 13);
        u[j + 2 + o] = __builtin_shufflevector(t[j + o], t[j + 2 + o], 2, 3, 10, 11, 6, 7, 14, 15);
      }
    // u[0]: column 0 | 4 of rows 0-3, u[1]: 1 | 5, u[2]: 2 | 6, u[3]: 3 | 7; u[4..7] rows 4-7.
    for (int o = 0; o < 4; ++o) {
      c[o] = __builtin_shufflevector(u[o], u[4 + o], 0, 1, 2, 3, 8, 9, 10, 11);
      c[4 + o] = __builtin_shufflevector(u[o], u[4 + o], 4, 5, 6, 7, 12, 13, 14, 15);
    }
    for (int i = 0; i < 8; ++i) s += c[i] * c[i];
  }
  for (int64_t j = 0; j < kRowsTogether; ++j) {
    double tail = s[j];
    for (int64_t i = i0; i < cols; ++i)
      tail += static_cast<double>(x[j * ldx + i]) * x[j * ldx + i];
    sums[j] = tail;
  }
}

// The same for one row.
double sum_of_squares(const float* x, int64_t cols) {
  double s = 0;
  for (int64_t i = 0; i < cols; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

}  // namespace

void rms_norm(const float* x, int64_t rows, int64_t cols, int64_t ldx, const float* weight,
              float eps, float* y, int64_t ldy) {
  for (int64_t r0 = 0; r0 < rows; r0 += kRowsTogether) {
    const int64_t n = std::min(kRowsTogether, rows - r0);
    // The mean of squares in double: the sum of thousands of f32 squares keeps its precision.
    double sum[kRowsTogether];
    if (n == kRowsTogether)
      sums_of_squares(x + r0 * ldx, cols, ldx, sum);
    else
      for (int64_t j = 0; j < n; ++j) sum[j] = sum_of_squares(x + (r0 + j) * ldx, cols);
    for (int64_t j = 0; j < n; ++j) {
      const float* in = x + (r0 + j) * ldx;
      float* out = y + (r0 + j) * ldy;
      const float variance = static_cast<float>(sum[j] / static_cast<double>(cols));
      const float inv = 1.0f / std::sqrt(variance + eps);
      for (int64_t i = 0; i < cols; ++i) out[i] = weight[i] * (in[i] * inv);
    }
  }
}

}  // namespace dq4::ops
