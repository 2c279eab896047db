// matmul(): argument checks, activation quantization and the split of work over the pool.

#include <algorithm>
#include <cmath>
#include <string>

#include "../family.h"
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

}  // namespace

void matmul(const PackedWeights& w, const MatmulArgs& a) {
  kernels::check_matmul_args("w4a8::matmul", w.data() != nullptr, w.n(), w.k(), a);
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
  const kernels::TileSplit split = kernels::split_tiles(a.m, l.panels, threads);
  const uint8_t* packed = w.data();
  pool.run(
      split.tiles(),
      [&](int64_t t) {
        int64_t m0, m1, p0, p1;
        split.tile(t, &m0, &m1, &p0, &p1);
        if (p0 >= p1) return;
        const int64_t scratch_bytes =
            kernel.scratch_bytes != nullptr ? kernel.scratch_bytes(l, m1 - m0) : 0;
        thread_local AlignedBuffer run_scratch;  // one per worker thread, reused across calls
        if (run_scratch.size() < static_cast<size_t>(scratch_bytes))
          run_scratch = AlignedBuffer(static_cast<size_t>(scratch_bytes));
        kernel.run(l, packed, lhs, m0, m1, p0, p1, a.y, a.ldy, a.min, a.max,
                   scratch_bytes > 0 ? run_scratch.data() : nullptr);
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
