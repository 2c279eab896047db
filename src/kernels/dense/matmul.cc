// matmul(): argument checks, activation checks (and bf16 conversion for the kernels that need
// it) and the split of work over the pool.

#include <algorithm>
#include <string>

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

Layout layout_of(const PackedWeights& w) {
  return make_layout(w.n(), w.k(), w.element() == WeightType::bf16 ? Element::bf16 : Element::f32,
                     w.kernel().nr);
}

Lhs lhs_of(const MatmulArgs& a, uint32_t* pairs, int64_t ld_pairs) {
  Lhs lhs;
  lhs.x = a.x;
  lhs.ldx = a.ldx;
  lhs.pairs = pairs;
  lhs.ld_pairs = ld_pairs;
  return lhs;
}

}  // namespace

MatmulTiles::MatmulTiles(const PackedWeights& w, const MatmulArgs& a) : weights_(&w), args_(a) {
  kernels::check_matmul_args("dense::matmul", w.data() != nullptr, w.n(), w.k(), a);
  const Layout l = layout_of(w);
  if (w.kernel().needs_pairs && l.element == Element::bf16) {
    thread_local Scratch scratch;
    ld_pairs_ = (l.k + 1) / 2;
    pairs_ = scratch.pairs(a.m, ld_pairs_);
  }
  split_ = TileSplit::of(a.m, l.panels, kernels::call_threads(a.pool, a.max_threads).count);
}

int64_t MatmulTiles::prepare_rows(int64_t m0, int64_t m1) const {
  return weights_->kernel().prepare(layout_of(*weights_), m0, m1, lhs_of(args_, pairs_, ld_pairs_));
}

void MatmulTiles::run(int64_t t) const {
  int64_t m0, m1, p0, p1;
  split_.tile(t, &m0, &m1, &p0, &p1);
  if (p0 >= p1) return;
  const Layout l = layout_of(*weights_);
  // Accumulating into y, the partial sums between K blocks wait in scratch, not in y.
  uint8_t* scratch = args_.accumulate
                         ? kernels::thread_scratch(static_cast<size_t>((m1 - m0) * l.nr) * 4)
                         : nullptr;
  weights_->kernel().run(l, weights_->data(), lhs_of(args_, pairs_, ld_pairs_), m0, m1, p0, p1,
                         args_.y, args_.ldy, kernels::epilogue_of(args_),
                         reinterpret_cast<float*>(scratch));
}

void matmul(const PackedWeights& w, const MatmulArgs& a) {
  const MatmulTiles tiles(w, a);
  kernels::run_matmul(
      "dense::matmul", a.m, kernels::call_threads(a.pool, a.max_threads),
      [&](int64_t m0, int64_t m1) { return tiles.prepare_rows(m0, m1); }, tiles);
}

}  // namespace dq4::dense
