#pragma once
// The f32 baseline of the kernel benchmark: the same product in f32 with OpenBLAS,
// Y[m, n] = X[m, k] . W[n, k]^T (W row-major, as the weights are stored).

#include <cstdint>
#include <string>

namespace dq4::cli::bench {

// Number of threads OpenBLAS uses from now on.
void set_f32_threads(int threads);

// cblas_sgemv for m = 1, cblas_sgemm (X . W^T) otherwise; y is [m, n] with row stride n.
void f32_matmul(const float* w, int64_t n, int64_t k, const float* x, int64_t m, float* y);

// "OpenBLAS <config> (core <name>)", for the report header.
std::string f32_library();

}  // namespace dq4::cli::bench
