// matmul(): argument checks, activation quantization and the split of work over the pool.

#include <algorithm>
#include <cmath>
#include <string>

#include "dq4/error.h"
#include "dq4/thread_pool.h"
#include "dq4/w4a8.h"
#include "kernel.h"
#include "qai8dx.h"

namespace dq4::w4a8 {
namespace {

// Scratch for the quantized activations, grown as needed and reused by later calls.
struct Scratch {
  AlignedBuffer buffer;
  QuantizedLhs lhs;

  void prepare(int64_t m, const Layout& l) {
    const size_t q_bytes = static_cast<size_t>(round_up(m * l.kp, 64));
    const size_t row_bytes = static_cast<size_t>(round_up(m * 4, 64));
    const size_t sum_bytes = static_cast<size_t>(round_up(m * l.groups * 4, 64));
    const size_t total = q_bytes + 2 * row_bytes + sum_bytes;
    if (buffer.size() < total) buffer = AlignedBuffer(total);
    uint8_t* p = buffer.data();
    lhs.q = reinterpret_cast<int8_t*>(p);
    lhs.ldq = l.kp;
    lhs.recip = reinterpret_cast<float*>(p + q_bytes);
    lhs.zp = reinterpret_cast<int32_t*>(p + q_bytes + row_bytes);
    lhs.asum = reinterpret_cast<int32_t*>(p + q_bytes + 2 * row_bytes);
    lhs.groups = l.groups;
  }
};

void check_args(const PackedWeights& w, const MatmulArgs& a) {
  if (w.data() == nullptr) throw Error("w4a8::matmul: weights are empty (not packed)");
  if (a.m <= 0) throw Error("w4a8::matmul: m must be positive, got " + std::to_string(a.m));
  if (a.x == nullptr) throw Error("w4a8::matmul: x is null");
  if (a.y == nullptr) throw Error("w4a8::matmul: y is null");
  if (reinterpret_cast<uintptr_t>(a.x) % alignof(float) != 0)
    throw Error("w4a8::matmul: x is not aligned to 4 bytes");
  if (reinterpret_cast<uintptr_t>(a.y) % alignof(float) != 0)
    throw Error("w4a8::matmul: y is not aligned to 4 bytes");
  if (a.ldx < w.k())
    throw Error("w4a8::matmul: ldx " + std::to_string(a.ldx) + " is smaller than k " +
                std::to_string(w.k()));
  if (a.ldy < w.n())
    throw Error("w4a8::matmul: ldy " + std::to_string(a.ldy) + " is smaller than n " +
                std::to_string(w.n()));
  if (std::isnan(a.min) || std::isnan(a.max) || a.min > a.max)
    throw Error("w4a8::matmul: clamp range [" + std::to_string(a.min) + ", " +
                std::to_string(a.max) + "] is invalid");
}

}  // namespace

void matmul(const PackedWeights& w, const MatmulArgs& a) {
  check_args(w, a);
  const Kernel& kernel = w.kernel();
  const Layout l = make_layout(w.n(), w.k(), w.group_size(), kernel.nr);
  ThreadPool& pool = a.pool != nullptr ? *a.pool : ThreadPool::global();
  const int threads = a.max_threads > 0 ? std::min(a.max_threads, pool.size()) : pool.size();

  thread_local Scratch scratch;
  scratch.prepare(a.m, l);
  const QuantizedLhs& lhs = scratch.lhs;

  // Quantize every row once, rows split over the threads.
  const int64_t row_tasks = std::min<int64_t>(a.m, threads);
  std::vector<int64_t> bad_row(static_cast<size_t>(row_tasks), -1);
  pool.run(
      row_tasks,
      [&](int64_t t) {
        const int64_t m0 = a.m * t / row_tasks, m1 = a.m * (t + 1) / row_tasks;
        bad_row[t] = kernel.quantize(a.x, a.ldx, m0, m1, l, lhs);
      },
      threads);
  for (int64_t row : bad_row)
    if (row >= 0)
      throw Error("w4a8::matmul: activation row " + std::to_string(row) +
                  " holds a NaN or infinite value");

  // Output tiles: up to 128 rows x a range of panels; enough tiles to balance the threads,
  // each tile a contiguous byte range of the weights.
  const int64_t row_block = 128;
  const int64_t row_tiles = (a.m + row_block - 1) / row_block;
  const int64_t want_tiles = threads == 1 ? 1 : int64_t{4} * threads;
  const int64_t panel_tiles =
      std::clamp<int64_t>((want_tiles + row_tiles - 1) / row_tiles, 1, l.panels);
  const uint8_t* packed = w.data();
  pool.run(
      row_tiles * panel_tiles,
      [&](int64_t t) {
        const int64_t rt = t / panel_tiles, pt = t % panel_tiles;
        const int64_t m0 = rt * row_block, m1 = std::min(a.m, m0 + row_block);
        const int64_t p0 = l.panels * pt / panel_tiles, p1 = l.panels * (pt + 1) / panel_tiles;
        if (p0 < p1) kernel.run(l, packed, lhs, m0, m1, p0, p1, a.y, a.ldy, a.min, a.max);
      },
      threads);
}

QuantizedRow quantize_row(const float* x, int64_t k) {
  if (x == nullptr) throw Error("w4a8::quantize_row: x is null");
  if (k <= 0 || k > kMaxK) throw Error("w4a8::quantize_row: k out of range: " + std::to_string(k));
  extern const Kernel kReferenceKernel;
  const Layout l = make_layout(1, k, 0, kReferenceKernel.nr);
  Scratch scratch;
  scratch.prepare(1, l);
  if (kReferenceKernel.quantize(x, k, 0, 1, l, scratch.lhs) >= 0)
    throw Error("w4a8::quantize_row: the row holds a NaN or infinite value");
  QuantizedRow out;
  out.q.assign(scratch.lhs.q, scratch.lhs.q + k);
  out.zero_point = scratch.lhs.zp[0];
  out.recip_scale = scratch.lhs.recip[0];
  return out;
}

}  // namespace dq4::w4a8
