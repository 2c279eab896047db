// matmul(): argument checks, activation checks (and bf16 conversion for the kernels that need
// it) and the split of work over the pool.

#include <algorithm>
#include <string>
#include <vector>

#include "../family.h"
#include "dq4/dense.h"
#include "dq4/error.h"
#include "dq4/thread_pool.h"
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
  ThreadPool& pool = a.pool != nullptr ? *a.pool : ThreadPool::global();
  const int threads = a.max_threads > 0 ? std::min(a.max_threads, pool.size()) : pool.size();

  Lhs lhs;
  lhs.x = a.x;
  lhs.ldx = a.ldx;
  if (kernel.needs_pairs && element == Element::bf16) {
    thread_local Scratch scratch;
    lhs.ld_pairs = (l.k + 1) / 2;
    lhs.pairs = scratch.pairs(a.m, lhs.ld_pairs);
  }

  // Check (and convert) every row once, rows split over the threads.
  const int64_t row_tasks = std::min<int64_t>(a.m, threads);
  std::vector<int64_t> bad_row(static_cast<size_t>(row_tasks), -1);
  pool.run(
      row_tasks,
      [&](int64_t t) {
        bad_row[t] = kernel.prepare(l, a.m * t / row_tasks, a.m * (t + 1) / row_tasks, lhs);
      },
      threads);
  for (int64_t row : bad_row)
    if (row >= 0)
      throw Error("dense::matmul: activation row " + std::to_string(row) +
                  " holds a NaN or infinite value");

  const kernels::TileSplit split = kernels::split_tiles(a.m, l.panels, threads);
  const uint8_t* packed = w.data();
  pool.run(
      split.tiles(),
      [&](int64_t t) {
        int64_t m0, m1, p0, p1;
        split.tile(t, &m0, &m1, &p0, &p1);
        if (p0 < p1) kernel.run(l, packed, lhs, m0, m1, p0, p1, a.y, a.ldy, a.min, a.max);
      },
      threads);
}

}  // namespace dq4::dense
