// The table of dense kernels compiled into this build and the runtime choice among them.

#include <cstdlib>
#include <functional>
#include <string>

#include "../family.h"
#include "dq4/dense.h"
#include "kernel.h"

namespace dq4::dense {

extern const Kernel kReferenceKernel;
#if defined(__x86_64__)
extern const Kernel kAvx2Kernel;
extern const Kernel kAvx512fKernel;
extern const Kernel kAvx512Bf16Kernel;
#elif defined(__aarch64__)
extern const Kernel kNeonKernel;
extern const Kernel kNeonBf16Kernel;
#endif

std::vector<const Kernel*> compiled_kernels() {
  return {
    &kReferenceKernel,
#if defined(__x86_64__)
        &kAvx2Kernel, &kAvx512fKernel, &kAvx512Bf16Kernel,
#elif defined(__aarch64__)
        &kNeonKernel, &kNeonBf16Kernel,
#endif
  };
}

const Kernel* find_kernel(std::string_view name) {
  for (const Kernel* kernel : compiled_kernels())
    if (name == kernel->name) return kernel;
  return nullptr;
}

std::string_view kernel_name(const Kernel& kernel) { return kernel.name; }

bool kernel_is_exact(const Kernel& kernel) { return kernel.exact; }

bool kernel_supported(const Kernel& kernel, std::string* why) {
  if (kernel.supported(cpu_features())) return true;
  if (why != nullptr) *why = kernels::unsupported_reason(kernel.name, kernel.needs);
  return false;
}

const Kernel& select_kernel(std::string_view isa_override) {
  return kernels::select_kernel("dense", compiled_kernels(), isa_override);
}

const Kernel& default_kernel() {
  static const Kernel& chosen = [] {
    const char* env = std::getenv("DQ4_ISA");
    return std::ref(select_kernel(env != nullptr ? env : ""));
  }();
  return chosen;
}

}  // namespace dq4::dense
