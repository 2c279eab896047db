// matmul(): argument checks and the split of the work over the pool.

#include <algorithm>
#include <string>

#include "../family.h"
#include "../finite_rows.h"
#include "../w4a8/kernel.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/w4a16.h"
#include "kernel.h"

namespace dq4::w4a16 {
namespace {

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

constexpr const char* kFunction = "w4a16::matmul";

}  // namespace

MatmulTiles::MatmulTiles(const PackedWeights& w, const MatmulArgs& a)
    : kernel_(w.data() != nullptr ? &w.kernel() : nullptr),
      packed_(w.data()),
      n_(w.n()),
      k_(w.k()),
      group_size_(w.group_size()),
      nr_(w.data() != nullptr ? w.kernel().nr : 0),
      f32_group_scales_(w.f32_group_scales()),
      args_(a) {
  kernels::check_matmul_args(kFunction, w.data() != nullptr, w.n(), w.k(), a);
  split_ =
      TileSplit::of(a.m, (n_ + nr_ - 1) / nr_, kernels::call_threads(a.pool, a.max_threads).count);
}

MatmulTiles::MatmulTiles(const w4a8::PackedWeights& w, const MatmulArgs& a)
    : kernel_(nullptr),
      packed_(w.data()),
      n_(w.n()),
      k_(w.k()),
      group_size_(w.group_size()),
      nr_(0),
      f32_group_scales_(false),
      args_(a) {
  kernels::check_matmul_args(kFunction, w.data() != nullptr, w.n(), w.k(), a);
  nr_ = w.kernel().nr;
  kernel_ = &kernel_for_width(nr_);
  split_ =
      TileSplit::of(a.m, (n_ + nr_ - 1) / nr_, kernels::call_threads(a.pool, a.max_threads).count);
}

int64_t MatmulTiles::prepare_rows(int64_t m0, int64_t m1) const {
  return kernels::first_non_finite_row(args_.x, args_.ldx, k_, m0, m1);
}

void MatmulTiles::run(int64_t t) const {
  int64_t m0, m1, p0, p1;
  split_.tile(t, &m0, &m1, &p0, &p1);
  if (p0 >= p1) return;
  const Layout l = make_layout(n_, k_, group_size_, nr_,
                               f32_group_scales_ ? GroupScales::f32 : GroupScales::bf16);
  kernel_->run(l, packed_, args_.x, args_.ldx, m0, m1, p0, p1, args_.y, args_.ldy,
               kernels::epilogue_of(args_));
}

namespace {

template <class Weights>
void run_matmul(const Weights& w, const MatmulArgs& a) {
  const MatmulTiles tiles(w, a);
  kernels::run_matmul(
      kFunction, a.m, kernels::call_threads(a.pool, a.max_threads),
      [&](int64_t m0, int64_t m1) { return tiles.prepare_rows(m0, m1); }, tiles);
}

}  // namespace

void matmul(const PackedWeights& w, const MatmulArgs& a) { run_matmul(w, a); }

void matmul(const w4a8::PackedWeights& w, const MatmulArgs& a) { run_matmul(w, a); }

}  // namespace dq4::w4a16
