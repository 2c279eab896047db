#pragma once
// The kernels of one family that this build holds and this CPU runs.

#include <vector>

#include "dq4/kernels/kernel_family.h"

namespace dq4::test {

// The family's compiled kernels that this CPU supports, in the family's order.
template <class Kernel>
std::vector<const Kernel*> supported_here(const KernelFamily<Kernel>& family) {
  std::vector<const Kernel*> out;
  for (const Kernel* k : family.kernels())
    if (family.supported(*k)) out.push_back(k);
  return out;
}

}  // namespace dq4::test
