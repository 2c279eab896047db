// The table of dense kernels compiled into this build and the runtime choice among them.

#include "../family.h"
#include "dq4/kernels/dense.h"
#include "kernel.h"

namespace dq4::dense {

extern const Kernel kReferenceKernel;
#if defined(__x86_64__)
extern const Kernel kAvx2Kernel;
extern const Kernel kAvx512fKernel;
extern const Kernel kAvx512Bf16Kernel;
extern const Kernel kAmxBf16Kernel;
#elif defined(__aarch64__)
extern const Kernel kNeonKernel;
extern const Kernel kNeonBf16Kernel;
#endif

const KernelFamily<Kernel>& family() {
  static const KernelFamily<Kernel> table("dense", {
    &kReferenceKernel,
#if defined(__x86_64__)
        &kAvx2Kernel, &kAvx512fKernel, &kAvx512Bf16Kernel, &kAmxBf16Kernel,
#elif defined(__aarch64__)
        &kNeonKernel, &kNeonBf16Kernel,
#endif
  });
  return table;
}

}  // namespace dq4::dense

template class dq4::KernelFamily<dq4::dense::Kernel>;
