// The table of attention kernels compiled into this build and the runtime choice among them.

#include <string>

#include "../family.h"
#include "dq4/attention.h"
#include "kernel.h"

namespace dq4::attention {

extern const Kernel kReferenceKernel;
#if defined(__x86_64__)
extern const Kernel kAvx2Kernel;
extern const Kernel kAvx512fKernel;
#elif defined(__aarch64__)
extern const Kernel kNeonKernel;
#endif

std::vector<const Kernel*> compiled_kernels() {
  return {
    &kReferenceKernel,
#if defined(__x86_64__)
        &kAvx2Kernel, &kAvx512fKernel,
#elif defined(__aarch64__)
        &kNeonKernel,
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
  return kernels::select_kernel("attention", compiled_kernels(), isa_override);
}

const Kernel& default_kernel() {
  static const Kernel& chosen = kernels::select_from_environment("attention", compiled_kernels());
  return chosen;
}

}  // namespace dq4::attention
