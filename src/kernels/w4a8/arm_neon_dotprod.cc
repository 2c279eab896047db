// W4A8 on NEON with FEAT_DotProd (SDOT), 16-column panels: the integer sums of arm_neon_sdot.h
// around the shared quantization and epilogue of arm_neon_w4a8.h.
// Compiled with -march=armv8.2-a+dotprod.

#include "arm_neon_sdot.h"

namespace dq4::w4a8 {
namespace {

bool supported(const CpuFeatures& f) { return f.neon && f.neon_dotprod; }

}  // namespace

extern const Kernel kNeonDotprodKernel = {"neon_dotprod",
                                          "qai8dx_qsi4_f32_neondotprod_4x16",
                                          "neon+dotprod",
                                          arm::kNr,
                                          supported,
                                          arm::quantize,
                                          arm::run<arm::SdotSums>};

}  // namespace dq4::w4a8
