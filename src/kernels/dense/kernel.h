#pragma once
// The descriptor every dense variant fills in (one per ISA file). Kernels never allocate or start
// threads: matmul() splits the work into row ranges x panel ranges and calls `run` on each.

#include <cstdint>

#include "../epilogue.h"
#include "../finite_rows.h"
#include "dq4/kernels/cpu_features.h"
#include "layout.h"

namespace dq4::dense {

// The activations as the kernels read them.
struct Lhs {
  const float* x = nullptr;  // [m, ldx]
  int64_t ldx = 0;
  uint32_t* pairs = nullptr;  // [m, ld_pairs] bf16 pairs of x (only kernels with needs_pairs)
  int64_t ld_pairs = 0;       // = ceil(k / 2)
};

struct Kernel {
  const char* name;     // what DQ4_ISA calls it: the ISA
  const char* variant;  // what it computes: types, ISA, tiles (family.h)
  const char* needs;    // the CPU features it needs, for error messages
  int64_t nr;           // panel width of its packed layout
  bool exact;           // computes the exact math of dense.h (else: chosen only by name)
  bool needs_pairs;     // prepare() fills Lhs::pairs
  bool (*supported)(const CpuFeatures&);
  // Checks rows [m0, m1) of the activations (and converts them if needs_pairs). Returns the
  // index of the first row holding a non-finite value, or -1.
  int64_t (*prepare)(const Layout& layout, int64_t m0, int64_t m1, const Lhs& lhs);
  // y[m0..m1) x [columns of panels p0..p1) = clamp(x . w^T + bias), stored or added as `out`
  // says (../epilogue.h). `partial`: (m1 - m0) x nr floats for the partial sums between K
  // blocks when accumulating (they wait in y otherwise); null when not accumulating.
  void (*run)(const Layout& layout, const uint8_t* packed, const Lhs& lhs, int64_t m0, int64_t m1,
              int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue out, float* partial);
};

// The first row of [m0, m1) holding a NaN or an infinity, or -1.
DQ4_DENSE_INLINE int64_t first_non_finite_row(const Layout& l, int64_t m0, int64_t m1,
                                              const Lhs& lhs) {
  return kernels::first_non_finite_row(lhs.x, lhs.ldx, l.k, m0, m1);
}

}  // namespace dq4::dense
