// The table of W4A8 kernels compiled into this build and the runtime choice among them.

#include <string>

#include "../family.h"
#include "dq4/error.h"
#include "dq4/w4a8.h"
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

std::vector<const Kernel*> compiled_kernels() {
  return {
    &kReferenceKernel,
#if defined(__x86_64__)
        &kAvx2Kernel, &kAvxVnniKernel, &kAvx512VnniKernel,
#elif defined(__aarch64__)
        &kNeonKernel, &kNeonDotprodKernel, &kNeonI8mmKernel,
#endif
  };
}

const Kernel* find_kernel(std::string_view name) {
  return kernels::find_by_name(compiled_kernels(), name);
}

std::string_view kernel_name(const Kernel& kernel) { return kernel.name; }

bool kernel_supported(const Kernel& kernel, std::string* why) {
  return kernels::supported_here(kernel, why);
}

const Kernel& select_kernel(std::string_view isa_override) {
  return kernels::select_kernel("w4a8", compiled_kernels(), isa_override);
}

const Kernel& default_kernel() {
  static const Kernel& chosen = kernels::select_from_environment("w4a8", compiled_kernels());
  return chosen;
}

}  // namespace dq4::w4a8
