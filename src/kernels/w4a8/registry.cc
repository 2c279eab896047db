// The table of W4A8 kernels compiled into this build and the runtime choice among them.

#include <string>

#include "../family.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/w4a8.h"
#include "kernel.h"

namespace dq4::w4a8 {

extern const Kernel kReferenceKernel;
#if defined(__x86_64__)
extern const Kernel kAvx2Kernel;
extern const Kernel kAvxVnniKernel;
extern const Kernel kAvx512VnniKernel;
#elif defined(__aarch64__)
extern const Kernel kNeonKernel;
extern const Kernel kNeonDotprodKernel;
extern const Kernel kNeonI8mmKernel;
#endif

namespace {

const kernels::Registry<Kernel>& registry() {
  static const kernels::Registry<Kernel> table("w4a8", {
    &kReferenceKernel,
#if defined(__x86_64__)
        &kAvx2Kernel, &kAvxVnniKernel, &kAvx512VnniKernel,
#elif defined(__aarch64__)
        &kNeonKernel, &kNeonDotprodKernel, &kNeonI8mmKernel,
#endif
  });
  return table;
}

}  // namespace

DQ4_KERNEL_FAMILY_FUNCTIONS

}  // namespace dq4::w4a8
