// W4A16 packing: the shared int4 packer (../int4/pack.h) with the checkpoint's group scales kept
// exact.

#include "../int4/pack.h"

#include <utility>

#include "dq4/kernels/thread_pool.h"
#include "dq4/kernels/w4a16.h"
#include "kernel.h"

namespace dq4::w4a16 {

PackedWeights pack(const int4::WeightSource& source, const Kernel& kernel, ThreadPool* pool) {
  // bf16 group scales are stored as they are (so the pack is W4A8's too); f32 and f16 ones would
  // lose bits in bf16 and are stored as f32.
  const bool f32_scales = source.scale_type != int4::ScaleType::bf16;
  int4::PackedPanels panels =
      int4::pack_panels(source, kernel.nr, f32_scales ? GroupScales::f32 : GroupScales::bf16,
                        pool != nullptr ? *pool : ThreadPool::global(), "w4a16::pack");
  PackedWeights out;
  out.data_ = std::move(panels.data);
  out.kernel_ = &kernel;
  out.n_ = source.n;
  out.k_ = source.k;
  out.group_size_ = panels.group_size;
  out.f32_group_scales_ = f32_scales && panels.group_size != 0;
  return out;
}

}  // namespace dq4::w4a16
