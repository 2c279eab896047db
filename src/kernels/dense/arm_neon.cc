// Dense on NEON (AArch64 baseline): the exact math (dense.h), 16-column panels (4 q registers per
// step), one FMLA chain per output lane.

#include "arm_neon_dense.h"

namespace dq4::dense {
namespace {

int64_t prepare(const Layout& l, int64_t m0, int64_t m1, const Lhs& lhs) {
  return first_non_finite_row(l, m0, m1, lhs);
}

bool supported(const CpuFeatures& f) { return f.neon; }

}  // namespace

extern const Kernel kNeonKernel = {
    "neon",         "f32_f32bf16_f32_neon_4x16", "neon", Neon::kNr, true, false, supported, prepare,
    run_exact<Neon>};

}  // namespace dq4::dense
