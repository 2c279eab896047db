// matmul(): argument checks, activation checks (and bf16 conversion for the kernels that need
// it) and the split of work over the pool.

#include <algorithm>
#include <string>
#include <vector>

#include "../family.h"
#include "dq4/kernels/dense.h"
#include "dq4/kernels/error.h"
#include "kernel.h"

namespace dq4::dense {
namespace {

// Scratch for the bf16 pairs of the activations, grown as needed and reused by later calls.
struct Scratch {
  AlignedBuffer buffer;

  uint32_t* pairs(int64_t m, int64_t ld_pairs) {
    const size_t bytes = static_cast<size_t>(m * ld_pairs) * sizeof(uint32_t);
    if (buffer.size() < bytes) buffer = AlignedBuffer(bytes);
    return reinterpret_cast<uint32_t*>(buffer.data());
  }
};

}  // namespace

void matmul(const PackedWeights& w, const MatmulArgs& a) {
  kernels::check_matmul_args("dense::matmul", w.data() != nullptr, w.n(), w.k(), a);
  const Kernel& kernel = w.kernel();
  const Element element = w.element() == WeightType::bf16 ? Element::bf16 : Element::f32;
  const Layout l = make_layout(w.n(), w.k(), element, kernel.nr);
  const kernels::CallThreads threads = kernels::call_threads(a.pool, a.max_threads);

  Lhs lhs;
  lhs.x = a.x;
  lhs.ldx = a.ldx;
  if (kernel.needs_pairs && element == Element::bf16) {
    thread_local Scratch scratch;
    lhs.ld_pairs = (l.k + 1) / 2;
    lhs.pairs = scratch.pairs(a.m, lhs.ld_pairs);
  }

  kernels::prepare_rows("dense::matmul", a.m, threads,
                        [&](int64_t m0, int64_t m1) { return kernel.prepare(l, m0, m1, lhs); });
  const uint8_t* packed = w.data();
  kernels::run_tiles(a.m, l.panels, threads, [&](int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
    kernel.run(l, packed, lhs, m0, m1, p0, p1, a.y, a.ldy, a.min, a.max);
  });
}

}  // namespace dq4::dense
