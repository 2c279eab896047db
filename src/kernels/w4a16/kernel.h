#pragma once
// The descriptor every W4A16 variant fills in (one per ISA file). Variants read the int4 layout
// shared with W4A8 (../int4/layout.h) and never allocate or start threads: matmul() splits the
// output into row ranges x panel ranges and calls `run` on each.

#include <cstdint>

#include "../epilogue.h"
#include "../int4/layout.h"
#include "dq4/kernels/cpu_features.h"

namespace dq4::w4a16 {

using int4::GroupScales;
using int4::Layout;
using int4::make_layout;
using int4::panel_view;
using int4::PanelView;

struct Kernel {
  const char* name;     // what DQ4_ISA calls it: the ISA
  const char* variant;  // what it computes: types, ISA, tiles (family.h)
  const char* needs;    // the CPU features it needs, for error messages
  int64_t nr;           // panel width of the layout it packs (the reference runs any width)
  bool (*supported)(const CpuFeatures&);
  // y[m0..m1) x [columns of panels p0..p1) = clamp(x[m0..m1) . dequant(W)^T + bias, lo, hi),
  // stored or added as `out` says (../epilogue.h); x and y with row strides ldx and ldy.
  void (*run)(const Layout& layout, const uint8_t* packed, const float* x, int64_t ldx, int64_t m0,
              int64_t m1, int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue out);
};

// The k of group g that hold weights (the layout pads the last group beyond k).
DQ4_ALWAYS_INLINE int64_t group_k_count(const Layout& l, int64_t g) {
  return l.group_end(g) - l.group_begin(g);
}

}  // namespace dq4::w4a16
