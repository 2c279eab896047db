// Dense on AVX512F: the exact math (dense.h), 64-column panels, one FMA chain per output lane.
// Compiled with -mavx2 -mfma -mavx512f.

#include "x86_zmm_dense.h"

namespace dq4::dense {
namespace {

int64_t prepare(const Layout& l, int64_t m0, int64_t m1, const Lhs& lhs) {
  return first_non_finite_row(l, m0, m1, lhs);
}

bool supported(const CpuFeatures& f) { return f.avx512f; }

}  // namespace

extern const Kernel kAvx512fKernel = {"avx512f",     "f32_f32bf16_f32_avx512f_4x64",
                                      "avx512f",     Zmm::kNr,
                                      true,          false,
                                      supported,     prepare,
                                      run_exact<Zmm>};

}  // namespace dq4::dense
