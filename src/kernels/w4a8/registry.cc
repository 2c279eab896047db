// The table of W4A8 kernels compiled into this build and the runtime choice among them.

#include "../family.h"
#include "dq4/kernels/w4a8.h"
#include "kernel.h"

namespace dq4::w4a8 {

extern const Kernel kReferenceKernel;
#if defined(__x86_64__)
extern const Kernel kAvx2Kernel;
extern const Kernel kAvxVnniKernel;
extern const Kernel kAvx512VnniKernel;
extern const Kernel kAvx512VnniZen4Kernel;
extern const Kernel kAmxModelKernel;
extern const Kernel kAmxKernel;
#elif defined(__aarch64__)
extern const Kernel kNeonKernel;
extern const Kernel kNeonDotprodKernel;
extern const Kernel kNeonI8mmKernel;
#endif

const KernelFamily<Kernel>& family() {
  static const KernelFamily<Kernel> table("w4a8", {
    &kReferenceKernel,
#if defined(__x86_64__)
        // amx_model right after the reference: chosen only by name, never the best.
        // avx512_vnni_zen4 is preferred only on the cores it is tuned for.
        &kAmxModelKernel, &kAvx2Kernel, &kAvxVnniKernel, &kAvx512VnniKernel, &kAvx512VnniZen4Kernel,
        &kAmxKernel,
#elif defined(__aarch64__)
        &kNeonKernel, &kNeonDotprodKernel, &kNeonI8mmKernel,
#endif
  });
  return table;
}

}  // namespace dq4::w4a8

template class dq4::KernelFamily<dq4::w4a8::Kernel>;
