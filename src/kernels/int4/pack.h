#pragma once
// Validation of checkpoint int4 weights and packing into the layout of layout.h, shared by the
// W4A8 and W4A16 families (their pack() wrappers choose the panel width and the scale type).

#include <cstdint>

#include "dq4/kernels/aligned_buffer.h"
#include "dq4/kernels/int4.h"
#include "layout.h"

namespace dq4 {
class ThreadPool;
}

namespace dq4::int4 {

struct PackedPanels {
  AlignedBuffer data;      // make_layout(n, k, group_size, nr, scales).panels panels
  int64_t group_size = 0;  // normalised: 0 when channelwise (also for group_size == k)
};

// Validates `source` and packs it in parallel over `pool`. Throws dq4::Error naming the field,
// the message starting with `who` (e.g. "w4a16::pack").
PackedPanels pack_panels(const WeightSource& source, int64_t nr, GroupScales scales,
                         ThreadPool& pool, const char* who);

}  // namespace dq4::int4
