#include "bench/f32_baseline.h"

#include <cblas.h>

namespace dq4::cli::bench {

void set_f32_threads(int threads) { openblas_set_num_threads(threads); }

void f32_matmul(const float* w, int64_t n, int64_t k, const float* x, int64_t m, float* y) {
  const auto N = static_cast<blasint>(n), K = static_cast<blasint>(k), M = static_cast<blasint>(m);
  if (m == 1) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, 1.0f, w, K, x, 1, 0.0f, y, 1);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x, K, w, K, 0.0f, y, N);
  }
}

std::string f32_library() {
  return std::string("OpenBLAS ") + openblas_get_config() + " (core " + openblas_get_corename() +
         ")";
}

}  // namespace dq4::cli::bench
