// The table of attention kernels compiled into this build and the runtime choice among them.

#include "../family.h"
#include "dq4/kernels/attention.h"
#include "kernel.h"

namespace dq4::attention {

extern const Kernel kReferenceKernel;
#if defined(__x86_64__)
extern const Kernel kAvx2Kernel;
extern const Kernel kAvx512fKernel;
extern const Kernel kAvx512fZen4Kernel;
#elif defined(__aarch64__)
extern const Kernel kNeonKernel;
#endif

const KernelFamily<Kernel>& family() {
  static const KernelFamily<Kernel> table("attention", {
    &kReferenceKernel,
#if defined(__x86_64__)
        &kAvx2Kernel, &kAvx512fKernel, &kAvx512fZen4Kernel,
#elif defined(__aarch64__)
        &kNeonKernel,
#endif
  });
  return table;
}

}  // namespace dq4::attention

template class dq4::KernelFamily<dq4::attention::Kernel>;
