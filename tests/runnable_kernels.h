#pragma once
// The kernels of one family that this build holds and this CPU runs.

#include <vector>

namespace dq4::test {

// `compiled` (a family's compiled_kernels()) filtered by the family's kernel_supported(), which
// argument-dependent lookup finds in the kernel's namespace.
template <class Kernel>
std::vector<const Kernel*> supported_here(const std::vector<const Kernel*>& compiled) {
  std::vector<const Kernel*> out;
  for (const Kernel* k : compiled)
    if (kernel_supported(*k)) out.push_back(k);
  return out;
}

}  // namespace dq4::test
