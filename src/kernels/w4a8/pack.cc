// W4A8 packing: the shared int4 packer (../int4/pack.h) with bf16 group scales, as KleidiAI's
// qsi4c32p holds them.

#include "../int4/pack.h"

#include <utility>

#include "dq4/kernels/thread_pool.h"
#include "dq4/kernels/w4a8.h"
#include "kernel.h"

namespace dq4::w4a8 {

PackedWeights pack(const int4::WeightSource& source, const Kernel& kernel, ThreadPool* pool) {
  int4::PackedPanels panels =
      int4::pack_panels(source, kernel.nr, GroupScales::bf16,
                        pool != nullptr ? *pool : ThreadPool::global(), "w4a8::pack");
  PackedWeights out;
  out.data_ = std::move(panels.data);
  out.kernel_ = &kernel;
  out.n_ = source.n;
  out.k_ = source.k;
  out.group_size_ = panels.group_size;
  return out;
}

}  // namespace dq4::w4a8
