// matmul(): argument checks, activation quantization (once per input, QuantizedActivations) and
// the split of work over the pool.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>

#include "../family.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/kernels/w4a8.h"
#include "kernel.h"
#include "qai8dx.h"

namespace dq4::w4a8 {
namespace {

// Activation sums are kept per block of this many k: every group size is a multiple of it.
constexpr int64_t kSumBlock = 32;

// The layout quantization runs in: one "group" per 32-k block (a single one when k <= 32), so
// the kernels' per-group sums are the block sums.
Layout block_layout(int64_t k, const Kernel& kernel) {
  return make_layout(1, k, k > kSumBlock ? kSumBlock : 0, kernel.nr);
}

void check_sizes(const char* function, int64_t m, int64_t k) {
  if (m <= 0) throw Error(std::string(function) + ": m must be positive, got " + std::to_string(m));
  if (k <= 0 || k > kMaxK)
    throw Error(std::string(function) + ": k out of range: " + std::to_string(k));
}

}  // namespace

QuantizedRow QuantizedActivations::row(int64_t r) const {
  if (r < 0 || r >= m_)
    throw Error("QuantizedActivations::row: row " + std::to_string(r) + " out of [0, " +
                std::to_string(m_) + ")");
  const int8_t* q = reinterpret_cast<const int8_t*>(data_.data()) + r * ldq_;
  QuantizedRow out;
  out.q.assign(q, q + k_);
  out.zero_point = reinterpret_cast<const int32_t*>(data_.data() + zp_offset_)[r];
  out.recip_scale = reinterpret_cast<const float*>(data_.data() + recip_offset_)[r];
  return out;
}

void QuantizedActivations::reserve(int64_t m, int64_t k, const Kernel* kernel) {
  check_sizes("w4a8::quantize_activations", m, k);
  const Kernel& quantizer = kernel != nullptr ? *kernel : family().default_kernel();
  const int64_t ldq = round_up(k, kSumBlock), blocks = ldq / kSumBlock;
  const size_t q_bytes = static_cast<size_t>(round_up(m * ldq, 64));
  const size_t row_bytes = static_cast<size_t>(round_up(m * 4, 64));
  const size_t sum_bytes = static_cast<size_t>(round_up(m * blocks * 4, 64));
  const size_t total = q_bytes + 2 * row_bytes + 2 * sum_bytes;
  if (data_.size() < total) data_ = AlignedBuffer(total);
  quantizer_ = &quantizer;
  m_ = m;
  k_ = k;
  ldq_ = ldq;
  blocks_ = blocks;
  recip_offset_ = q_bytes;
  zp_offset_ = q_bytes + row_bytes;
  sums_offset_ = q_bytes + 2 * row_bytes;
  corrections_offset_ = sums_offset_ + sum_bytes;
  lane_corrections_ = quantizer.fills_lane_corrections;
}

int64_t QuantizedActivations::quantize_rows(const float* x, int64_t ldx, int64_t m0, int64_t m1) {
  uint8_t* base = data_.data();
  QuantizedLhs lhs;
  lhs.q = reinterpret_cast<int8_t*>(base);
  lhs.ldq = ldq_;
  lhs.recip = reinterpret_cast<float*>(base + recip_offset_);
  lhs.zp = reinterpret_cast<int32_t*>(base + zp_offset_);
  lhs.asum = reinterpret_cast<int32_t*>(base + sums_offset_);
  lhs.groups = blocks_;
  lhs.block_lane_corrections = reinterpret_cast<int32_t*>(base + corrections_offset_);
  return quantizer_->quantize(x, ldx, m0, m1, block_layout(k_, *quantizer_), lhs);
}

void QuantizedActivations::copy_row(int64_t to, const QuantizedActivations& from, int64_t row) {
  const uint8_t* src = from.data_.data();
  uint8_t* dst = data_.data();
  std::memcpy(dst + to * ldq_, src + row * ldq_, static_cast<size_t>(ldq_));
  std::memcpy(dst + recip_offset_ + to * 4, src + from.recip_offset_ + row * 4, 4);
  std::memcpy(dst + zp_offset_ + to * 4, src + from.zp_offset_ + row * 4, 4);
  std::memcpy(dst + sums_offset_ + to * blocks_ * 4, src + from.sums_offset_ + row * blocks_ * 4,
              static_cast<size_t>(blocks_ * 4));
  if (lane_corrections_)
    std::memcpy(dst + corrections_offset_ + to * blocks_ * 4,
                src + from.corrections_offset_ + row * blocks_ * 4,
                static_cast<size_t>(blocks_ * 4));
}

// quantize_activations() for `function` (named in errors).
void quantize_checked(const char* function, const float* x, int64_t m, int64_t k, int64_t ldx,
                      QuantizedActivations& out, ThreadPool* pool, int max_threads,
                      const Kernel* kernel) {
  const auto fail = [&](const std::string& what) {
    throw Error(std::string(function) + ": " + what);
  };
  if (x == nullptr) fail("x is null");
  check_sizes(function, m, k);
  if (ldx < k) fail("ldx " + std::to_string(ldx) + " is smaller than k " + std::to_string(k));
  if (max_threads < 0) fail("max_threads must be >= 0, got " + std::to_string(max_threads));
  out.reserve(m, k, kernel);
  const kernels::CallThreads threads = kernels::call_threads(pool, max_threads);
  const int64_t tasks = std::min<int64_t>(m, threads.count);
  FirstBadRow bad;
  threads.pool.run(
      tasks,
      [&](int64_t t) { bad.add(out.quantize_rows(x, ldx, m * t / tasks, m * (t + 1) / tasks)); },
      threads.count);
  if (bad.get() >= 0) out.m_ = 0;  // empty until quantized
  kernels::check_rows(function, bad);
}

void quantize_activations(const float* x, int64_t m, int64_t k, int64_t ldx,
                          QuantizedActivations& out, ThreadPool* pool, int max_threads,
                          const Kernel* kernel) {
  quantize_checked("w4a8::quantize_activations", x, m, k, ldx, out, pool, max_threads, kernel);
}

namespace {

// The checks of both constructors; `whole_batch`: the tiles cover every row of x.
void check_tiles(const PackedWeights& w, const QuantizedActivations& x, int64_t first_row,
                 const MatmulArgs& a, bool whole_batch) {
  const char* f = "w4a8::matmul";
  kernels::check_output_args(f, w.data() != nullptr, w.n(), a);
  if (x.m() == 0) throw Error(std::string(f) + ": the activations are empty (not quantized)");
  if (whole_batch && x.m() != a.m)
    throw Error(std::string(f) + ": m " + std::to_string(a.m) + " differs from the " +
                std::to_string(x.m()) + " rows of the quantized activations");
  if (first_row < 0 || first_row + a.m > x.m())
    throw Error(std::string(f) + ": rows [" + std::to_string(first_row) + ", " +
                std::to_string(first_row + a.m) + ") are not within the " + std::to_string(x.m()) +
                " rows of the quantized activations");
  if (x.k() != w.k())
    throw Error(std::string(f) + ": the activations have k " + std::to_string(x.k()) +
                ", the weights k " + std::to_string(w.k()));
}

// Rows [m0, m1) of `asum` ([rows][groups]): each row's sums over its groups of `per_group` 32-k
// blocks, from the block sums ([rows][blocks]).
void sum_groups(const int32_t* block_sums, int64_t blocks, int64_t per_group, int64_t groups,
                int64_t m0, int64_t m1, int32_t* asum) {
  for (int64_t r = m0; r < m1; ++r) {
    const int32_t* row = block_sums + r * blocks;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t b1 = std::min(blocks, (g + 1) * per_group);
      int32_t total = 0;
      for (int64_t b = g * per_group; b < b1; ++b) total += row[b];
      asum[r * groups + g] = total;
    }
  }
}

// `count` consecutive scratch owner names no other call has (thread_scratch: 0 names none).
uint64_t scratch_owners(int64_t count) {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(static_cast<uint64_t>(count), std::memory_order_relaxed);
}

}  // namespace

MatmulTiles::MatmulTiles(const PackedWeights& w, const QuantizedActivations& x, const MatmulArgs& a)
    : weights_(&w), x_(&x), args_(a) {
  check_tiles(w, x, 0, a, true);
  const Layout l = make_layout(w.n(), w.k(), w.group_size(), w.kernel().nr);
  split_ = TileSplit::of(a.m, l.panels, kernels::call_threads(a.pool, a.max_threads).count);
  first_owner_ = scratch_owners(split_.row_tiles);
}

MatmulTiles::MatmulTiles(const PackedWeights& w, const QuantizedActivations& x, int64_t first_row,
                         const MatmulArgs& a)
    : weights_(&w), x_(&x), first_row_(first_row), args_(a) {
  check_tiles(w, x, first_row, a, false);
  const Layout l = make_layout(w.n(), w.k(), w.group_size(), w.kernel().nr);
  split_ = TileSplit::of(a.m, l.panels, kernels::call_threads(a.pool, a.max_threads).count);
  first_owner_ = scratch_owners(split_.row_tiles);
}

void MatmulTiles::run(int64_t t) const {
  int64_t m0, m1, p0, p1;
  split_.tile(t, &m0, &m1, &p0, &p1);
  if (p0 >= p1) return;
  const PackedWeights& w = *weights_;
  const QuantizedActivations& x = *x_;
  const Kernel& kernel = w.kernel();
  const Layout l = make_layout(w.n(), w.k(), w.group_size(), kernel.nr);
  // Row 0 of the tiles is row first_row_ of x: every per-row table starts there.
  const uint8_t* base = x.data_.data();
  const int64_t f = first_row_;
  const int32_t* block_sums =
      reinterpret_cast<const int32_t*>(base + x.sums_offset_) + f * x.blocks_;
  // One piece of this thread's scratch: the kernel's, then (unless the groups are the 32-k
  // blocks) the rows' sums over the weights' groups, added up from the block sums.
  const int64_t kernel_bytes =
      round_up(kernel.scratch_bytes != nullptr ? kernel.scratch_bytes(l, m1 - m0) : 0, 64);
  const bool block_groups = l.groups == x.blocks_;
  const int64_t sum_bytes = block_groups ? 0 : m1 * l.groups * 4;
  // Tiles of the same rows that follow one another on a thread find the scratch as the last left
  // it: the group sums below and the kernel's own layout of the rows need not be made again.
  bool kept = false;
  uint8_t* scratch = kernel_bytes + sum_bytes > 0
                         ? kernels::thread_scratch(
                               static_cast<size_t>(kernel_bytes + sum_bytes),
                               first_owner_ + static_cast<uint64_t>(m0 / split_.row_block), &kept)
                         : nullptr;
  QuantizedLhs lhs;
  lhs.q = const_cast<int8_t*>(reinterpret_cast<const int8_t*>(base)) + f * x.ldq_;
  lhs.ldq = x.ldq_;
  lhs.recip = const_cast<float*>(reinterpret_cast<const float*>(base + x.recip_offset_)) + f;
  lhs.zp = const_cast<int32_t*>(reinterpret_cast<const int32_t*>(base + x.zp_offset_)) + f;
  lhs.groups = l.groups;
  if (block_groups) {
    lhs.asum = const_cast<int32_t*>(block_sums);
  } else {
    // Rows [m0, m1) of an [m1, groups] table, so that the kernels index rows as everywhere else.
    lhs.asum = reinterpret_cast<int32_t*>(scratch + kernel_bytes);
    if (!kept)
      sum_groups(block_sums, x.blocks_, l.channelwise ? x.blocks_ : l.group / kSumBlock, l.groups,
                 m0, m1, lhs.asum);
  }
  lhs.block_lane_corrections =
      x.lane_corrections_
          ? const_cast<int32_t*>(reinterpret_cast<const int32_t*>(base + x.corrections_offset_)) +
                f * x.blocks_
          : nullptr;
  lhs.scratch_kept = kept;
  kernel.run(l, w.data(), lhs, m0, m1, p0, p1, args_.y, args_.ldy, kernels::epilogue_of(args_),
             kernel_bytes > 0 ? scratch : nullptr);
}

void matmul(const PackedWeights& w, const QuantizedActivations& x, const MatmulArgs& a) {
  const MatmulTiles tiles(w, x, a);
  const kernels::CallThreads threads = kernels::call_threads(a.pool, a.max_threads);
  threads.pool.run(
      tiles.count(), [&](int64_t t) { tiles.run(t); }, threads.count);
}

void matmul(const PackedWeights& w, const MatmulArgs& a) {
  const char* f = "w4a8::matmul";
  kernels::check_matmul_args(f, w.data() != nullptr, w.n(), w.k(), a);
  // This thread's, reused by its later calls (a reference: the tasks run on other threads).
  thread_local QuantizedActivations reused;
  QuantizedActivations& x = reused;
  x.reserve(a.m, w.k(), &w.kernel());
  const MatmulTiles tiles(w, x, a);
  kernels::run_matmul(
      f, a.m, kernels::call_threads(a.pool, a.max_threads),
      [&](int64_t m0, int64_t m1) { return x.quantize_rows(a.x, a.ldx, m0, m1); }, tiles);
}

QuantizedRow quantize_row(const float* x, int64_t k) {
  if (x == nullptr) throw Error("w4a8::quantize_row: x is null");
  if (k <= 0 || k > kMaxK) throw Error("w4a8::quantize_row: k out of range: " + std::to_string(k));
  extern const Kernel kReferenceKernel;
  QuantizedActivations q;
  quantize_checked("w4a8::quantize_row", x, 1, k, k, q, nullptr, 1, &kReferenceKernel);
  return q.row(0);
}

}  // namespace dq4::w4a8
