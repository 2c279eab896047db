// The table of W4A16 kernels compiled into this build and the runtime choice among them.

#include <string>

#include "../family.h"
#include "dq4/kernels/w4a16.h"
#include "kernel.h"

namespace dq4::w4a16 {

extern const Kernel kReferenceKernel;
#if defined(__x86_64__)
extern const Kernel kAvx2Kernel;
extern const Kernel kAvx512fKernel;
#elif defined(__aarch64__)
extern const Kernel kNeonKernel;
#endif

namespace {

const kernels::Registry<Kernel>& registry() {
  static const kernels::Registry<Kernel> table("w4a16", {
    &kReferenceKernel,
#if defined(__x86_64__)
        &kAvx2Kernel, &kAvx512fKernel,
#elif defined(__aarch64__)
        &kNeonKernel,
#endif
  });
  return table;
}

}  // namespace

DQ4_KERNEL_FAMILY_FUNCTIONS

}  // namespace dq4::w4a16
