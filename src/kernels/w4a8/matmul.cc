// matmul(): argument checks, activation quantization (once per input, QuantizedActivations) and
// the split of work over the pool.

#include <algorithm>
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

// The per-group activation sums layout `l` needs, from the block sums of `x` (no copy for G = 32).
const int32_t* group_sums(const Layout& l, const int32_t* block_sums, int64_t m, int64_t blocks) {
  if (l.groups == blocks) return block_sums;  // G = 32, or a single block
  thread_local std::vector<int32_t> sums;
  sums.resize(static_cast<size_t>(m * l.groups));
  const int64_t per_group = l.channelwise ? blocks : l.group / kSumBlock;
  for (int64_t r = 0; r < m; ++r) {
    const int32_t* row = block_sums + r * blocks;
    for (int64_t g = 0; g < l.groups; ++g) {
      const int64_t b1 = std::min(blocks, (g + 1) * per_group);
      int32_t total = 0;
      for (int64_t b = g * per_group; b < b1; ++b) total += row[b];
      sums[r * l.groups + g] = total;
    }
  }
  return sums.data();
}

// QuantizedLhs::block_lane_corrections, from the int8 rows and block sums of `x`, for a kernel
// that reads them on activations whose quantizer did not write them (rare: every quantizer that
// writes them belongs to a kernel that may read them, and matmul on f32 rows quantizes with the
// weights' kernel). Per dword of q (k % 4 = 0..3 in its bytes, little-endian) the k with
// k % 4 >= 2 are its two high bytes, sign-extended by arithmetic shifts.
const int32_t* computed_lane_corrections(const int8_t* q, int64_t ldq, const int32_t* block_sums,
                                         int64_t m, int64_t blocks) {
  thread_local std::vector<int32_t> corrections;
  corrections.resize(static_cast<size_t>(m * blocks));
  for (int64_t r = 0; r < m; ++r) {
    const int8_t* row = q + r * ldq;
    for (int64_t b = 0; b < blocks; ++b, row += kSumBlock) {
      int32_t high = 0;
      for (int64_t i = 0; i < kSumBlock; i += 4) {
        uint32_t dword;
        std::memcpy(&dword, row + i, 4);
        high += (static_cast<int32_t>(dword << 8) >> 24) + (static_cast<int32_t>(dword) >> 24);
      }
      corrections[r * blocks + b] = lane_correction(block_sums[r * blocks + b], high);
    }
  }
  return corrections.data();
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

// quantize_activations() for `function` (named in errors).
void quantize_checked(const std::string& f, const float* x, int64_t m, int64_t k, int64_t ldx,
                      QuantizedActivations& out, ThreadPool* pool, int max_threads,
                      const Kernel* kernel) {
  if (x == nullptr) throw Error(f + ": x is null");
  if (m <= 0) throw Error(f + ": m must be positive, got " + std::to_string(m));
  if (k <= 0 || k > kMaxK) throw Error(f + ": k out of range: " + std::to_string(k));
  if (ldx < k)
    throw Error(f + ": ldx " + std::to_string(ldx) + " is smaller than k " + std::to_string(k));
  if (max_threads < 0)
    throw Error(f + ": max_threads must be >= 0, got " + std::to_string(max_threads));
  const Kernel& quantizer = kernel != nullptr ? *kernel : family().default_kernel();

  const int64_t ldq = round_up(k, kSumBlock), blocks = ldq / kSumBlock;
  const size_t q_bytes = static_cast<size_t>(round_up(m * ldq, 64));
  const size_t row_bytes = static_cast<size_t>(round_up(m * 4, 64));
  const size_t sum_bytes = static_cast<size_t>(round_up(m * blocks * 4, 64));
  const size_t total = q_bytes + 2 * row_bytes + 2 * sum_bytes;
  if (out.data_.size() < total) out.data_ = AlignedBuffer(total);
  out.m_ = 0;  // empty until quantized
  out.k_ = k;
  out.ldq_ = ldq;
  out.blocks_ = blocks;
  out.recip_offset_ = q_bytes;
  out.zp_offset_ = q_bytes + row_bytes;
  out.sums_offset_ = q_bytes + 2 * row_bytes;
  out.corrections_offset_ = out.sums_offset_ + sum_bytes;
  uint8_t* base = out.data_.data();
  QuantizedLhs lhs;
  lhs.q = reinterpret_cast<int8_t*>(base);
  lhs.ldq = ldq;
  lhs.recip = reinterpret_cast<float*>(base + out.recip_offset_);
  lhs.zp = reinterpret_cast<int32_t*>(base + out.zp_offset_);
  lhs.asum = reinterpret_cast<int32_t*>(base + out.sums_offset_);
  lhs.groups = blocks;
  lhs.block_lane_corrections = reinterpret_cast<int32_t*>(base + out.corrections_offset_);
  const Layout blocks_layout = block_layout(k, quantizer);
  kernels::prepare_rows(f, m, kernels::call_threads(pool, max_threads),
                        [&](int64_t m0, int64_t m1) {
                          return quantizer.quantize(x, ldx, m0, m1, blocks_layout, lhs);
                        });
  out.lane_corrections_ = quantizer.fills_lane_corrections;
  out.m_ = m;
}

void quantize_activations(const float* x, int64_t m, int64_t k, int64_t ldx,
                          QuantizedActivations& out, ThreadPool* pool, int max_threads,
                          const Kernel* kernel) {
  quantize_checked("w4a8::quantize_activations", x, m, k, ldx, out, pool, max_threads, kernel);
}

void matmul(const PackedWeights& w, const QuantizedActivations& x, const MatmulArgs& a) {
  const std::string f = "w4a8::matmul";
  kernels::check_output_args(f, w.data() != nullptr, w.n(), a);
  if (x.m() == 0) throw Error(f + ": the activations are empty (not quantized)");
  if (x.m() != a.m)
    throw Error(f + ": m " + std::to_string(a.m) + " differs from the " + std::to_string(x.m()) +
                " rows of the quantized activations");
  if (x.k() != w.k())
    throw Error(f + ": the activations have k " + std::to_string(x.k()) + ", the weights k " +
                std::to_string(w.k()));
  const Kernel& kernel = w.kernel();
  const Layout l = make_layout(w.n(), w.k(), w.group_size(), kernel.nr);

  const uint8_t* base = x.data_.data();
  QuantizedLhs lhs;
  lhs.q = const_cast<int8_t*>(reinterpret_cast<const int8_t*>(base));
  lhs.ldq = x.ldq_;
  lhs.recip = const_cast<float*>(reinterpret_cast<const float*>(base + x.recip_offset_));
  lhs.zp = const_cast<int32_t*>(reinterpret_cast<const int32_t*>(base + x.zp_offset_));
  const int32_t* block_sums = reinterpret_cast<const int32_t*>(base + x.sums_offset_);
  lhs.asum = const_cast<int32_t*>(group_sums(l, block_sums, x.m(), x.blocks_));
  lhs.groups = l.groups;
  lhs.block_lane_corrections = const_cast<int32_t*>(
      x.lane_corrections_ || !kernel.fills_lane_corrections || l.group != 32
          ? reinterpret_cast<const int32_t*>(base + x.corrections_offset_)
          : computed_lane_corrections(lhs.q, x.ldq_, block_sums, x.m(), x.blocks_));

  const uint8_t* packed = w.data();
  kernels::run_tiles(a.m, l.panels, kernels::call_threads(a.pool, a.max_threads),
                     [&](int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
                       const int64_t scratch_bytes =
                           kernel.scratch_bytes != nullptr ? kernel.scratch_bytes(l, m1 - m0) : 0;
                       kernel.run(l, packed, lhs, m0, m1, p0, p1, a.y, a.ldy, a.min, a.max,
                                  scratch_bytes > 0
                                      ? kernels::thread_scratch(static_cast<size_t>(scratch_bytes))
                                      : nullptr);
                     });
}

void matmul(const PackedWeights& w, const MatmulArgs& a) {
  kernels::check_matmul_args("w4a8::matmul", w.data() != nullptr, w.n(), w.k(), a);
  thread_local QuantizedActivations x;  // reused by later calls of this thread
  quantize_checked("w4a8::matmul", a.x, a.m, w.k(), a.ldx, x, a.pool, a.max_threads, &w.kernel());
  matmul(w, x, a);
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
