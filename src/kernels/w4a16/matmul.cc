// matmul(): argument checks and the split of the work over the pool.

#include <algorithm>
#include <string>
#include <vector>

#include "../family.h"
#include "../finite_rows.h"
#include "../w4a8/kernel.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/w4a16.h"
#include "kernel.h"

namespace dq4::w4a16 {
namespace {

void run_rows_and_tiles(const Kernel& kernel, const Layout& l, const uint8_t* packed,
                        const MatmulArgs& a) {
  const kernels::CallThreads threads = kernels::call_threads(a.pool, a.max_threads);
  kernels::prepare_rows("w4a16::matmul", a.m, threads, [&](int64_t m0, int64_t m1) {
    return kernels::first_non_finite_row(a.x, a.ldx, l.k, m0, m1);
  });
  kernels::run_tiles(a.m, l.panels, threads, [&](int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
    kernel.run(l, packed, a.x, a.ldx, m0, m1, p0, p1, a.y, a.ldy, a.min, a.max);
  });
}

// The kernel that runs weights packed with panel width nr: the default when it matches (or is the
// reference, which runs any width), else the best supported one that matches, else the reference.
const Kernel& kernel_for_width(int64_t nr) {
  const Kernel& chosen = family().default_kernel();
  const std::vector<const Kernel*>& kernels = family().kernels();
  if (chosen.nr == nr || &chosen == kernels.front()) return chosen;
  for (auto it = kernels.rbegin(); it != kernels.rend(); ++it)
    if ((*it)->nr == nr && family().supported(**it)) return **it;
  return *kernels.front();
}

}  // namespace

void matmul(const PackedWeights& w, const MatmulArgs& a) {
  kernels::check_matmul_args("w4a16::matmul", w.data() != nullptr, w.n(), w.k(), a);
  const Kernel& kernel = w.kernel();
  const Layout l = make_layout(w.n(), w.k(), w.group_size(), kernel.nr,
                               w.f32_group_scales() ? GroupScales::f32 : GroupScales::bf16);
  run_rows_and_tiles(kernel, l, w.data(), a);
}

void matmul(const w4a8::PackedWeights& w, const MatmulArgs& a) {
  kernels::check_matmul_args("w4a16::matmul", w.data() != nullptr, w.n(), w.k(), a);
  const int64_t nr = w.kernel().nr;
  const Layout l = make_layout(w.n(), w.k(), w.group_size(), nr, GroupScales::bf16);
  run_rows_and_tiles(kernel_for_width(nr), l, w.data(), a);
}

}  // namespace dq4::w4a16
