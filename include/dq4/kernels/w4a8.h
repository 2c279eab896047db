#pragma once
// W4A8 "dynamic quant" matrix multiply: int4 symmetric weights (one scale per output channel or per
// group of G along K) times f32 activations that are quantized on the fly to int8 per row
// (KleidiAI's qai8dx: asymmetric, nudged zero point), giving f32:
//
//   Y[M, N] = clamp(dequant(qai8dx(X[M, K])) . dequant(W[N, K])^T + bias, min, max)
//
// in KleidiAI's exact epilogue order (shared/docs/checkpoint-format-and-math.md §6). Every kernel
// variant returns bit-identical results to the scalar reference and for any number of threads.
//
// Usage: pack the weights once with pack(), then call matmul() as often as needed; an input that
// several weights multiply can be quantized once (QuantizedActivations).

#include <cfloat>
#include <cstdint>
#include <string>
#include <vector>

#include "dq4/kernels/aligned_buffer.h"
#include "dq4/kernels/int4.h"
#include "dq4/kernels/kernel_family.h"
#include "dq4/kernels/matmul_args.h"

namespace dq4 {
class ThreadPool;
}

namespace dq4::w4a8 {

// One implementation of the family (scalar reference or one ISA). Opaque; see family().
struct Kernel;

// The kernels compiled into this build ("reference", "avx2", "avx_vnni", "avx512_vnni", "neon",
// "neon_dotprod", "neon_i8mm") and the choice among them: default_kernel() is the best this CPU
// supports, or the one DQ4_ISA names (dq4/kernels/kernel_family.h).
const KernelFamily<Kernel>& family();

}  // namespace dq4::w4a8

// Instantiated once, by the family's registry.cc (where Kernel is complete).
extern template class dq4::KernelFamily<dq4::w4a8::Kernel>;

namespace dq4::w4a8 {

// Packed weights: owned, aligned, in the layout of the kernel that packed them, with everything
// the epilogue needs (scales, per-column sums, bias).
class PackedWeights {
 public:
  PackedWeights() = default;

  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  // 0 when channelwise.
  int64_t group_size() const { return group_size_; }
  const Kernel& kernel() const { return *kernel_; }
  size_t bytes() const { return data_.size(); }
  const uint8_t* data() const { return data_.data(); }

 private:
  friend PackedWeights pack(const int4::WeightSource&, const Kernel&, ThreadPool*);
  AlignedBuffer data_;
  const Kernel* kernel_ = nullptr;
  int64_t n_ = 0, k_ = 0, group_size_ = 0;
};

// Packs `source` for `kernel` (multi-threaded over `pool`, default the global pool).
// Throws dq4::Error naming the field for any invalid input.
PackedWeights pack(const int4::WeightSource& source, const Kernel& kernel,
                   ThreadPool* pool = nullptr);
inline PackedWeights pack(const int4::WeightSource& source) {
  return pack(source, family().default_kernel());
}

using MatmulArgs = ::dq4::MatmulArgs;  // shared by every kernel family

// Y = clamp(qai8dx(X) . W^T + bias). Throws dq4::Error on invalid arguments (including non-finite
// activations). Reuses a per-thread scratch buffer for the quantized activations. To multiply one
// input by several weights, quantize it once: quantize_activations() below.
void matmul(const PackedWeights& weights, const MatmulArgs& args);

// The per-row activation quantization (qai8dx), exposed for tests and tools: returns the int8
// values q[k], the zero point and 1/scale exactly as matmul() uses them.
struct QuantizedRow {
  std::vector<int8_t> q;
  int32_t zero_point = 0;
  float recip_scale = 0;  // (rmax - rmin) / 255, the dequantization multiplier
};
QuantizedRow quantize_row(const float* x, int64_t k);

// Activations quantized once (qai8dx per row, as KleidiAI packs its qai8dxp LHS once for many
// RHS) for any number of matmuls with weights of the same k, whatever their kernel or group size:
// the int8 rows, their zero points and scales, and the sum of every 32-k block, from which the
// sums of each group size (and channelwise) follow exactly. matmul() on these gives the very bits
// matmul() on the f32 rows gives. Reusable: quantize_activations() keeps the memory it has.
class QuantizedActivations {
 public:
  int64_t m() const { return m_; }
  int64_t k() const { return k_; }
  // Row r as quantize_row() returns it.
  QuantizedRow row(int64_t r) const;

  // quantize_activations() in pieces, for a caller that runs the rows in a pool job of its own
  // (ThreadPool::run_stages): reserve() makes room for m rows of k (allocating only when the
  // buffers must grow) to be quantized with `kernel`'s vector code (default: default_kernel();
  // every kernel gives the same bits), and throws dq4::Error for invalid sizes; quantize_rows()
  // then quantizes rows [m0, m1) of x (row stride ldx >= k), from any thread, and returns the
  // first of them holding a NaN or an infinity, or -1. Every row must be quantized before a
  // matmul reads the activations.
  void reserve(int64_t m, int64_t k, const Kernel* kernel = nullptr);
  int64_t quantize_rows(const float* x, int64_t ldx, int64_t m0, int64_t m1);
  // Row `to` becomes a copy of row `row` of `from` (quantized by the same kind of kernel, of the
  // same k): a row quantized once and reused by several matmuls over different row sets (the
  // experts a token is routed to), from any thread. Unchecked: the caller reserved both.
  void copy_row(int64_t to, const QuantizedActivations& from, int64_t row);

 private:
  friend class MatmulTiles;
  friend void quantize_checked(const char*, const float*, int64_t, int64_t, int64_t,
                               QuantizedActivations&, ThreadPool*, int, const Kernel*);
  AlignedBuffer data_;
  const Kernel* quantizer_ = nullptr;
  int64_t m_ = 0, k_ = 0;
  int64_t ldq_ = 0, blocks_ = 0;  // row stride of the int8 values (k rounded up to 32); k blocks
  size_t recip_offset_ = 0, zp_offset_ = 0, sums_offset_ = 0, corrections_offset_ = 0;
  bool lane_corrections_ = false;  // whether the quantizer writes them (kernel-internal)
};

// Quantizes x[m, k] (row stride ldx >= k) into `out`, the rows split over at most `max_threads`
// threads of `pool` (default: the global pool, all threads), with `kernel`'s vector code (default:
// family().default_kernel(); every kernel gives the same bits). Throws dq4::Error for invalid
// arguments and for a row holding a NaN or infinite value (naming the row).
void quantize_activations(const float* x, int64_t m, int64_t k, int64_t ldx,
                          QuantizedActivations& out, ThreadPool* pool = nullptr,
                          int max_threads = 0, const Kernel* kernel = nullptr);

// Y = clamp(x . W^T + bias) on activations quantized by quantize_activations(): `args` as for
// matmul() but args.x and args.ldx are not used (may be null / 0) and args.m must equal x.m().
// Throws dq4::Error on invalid arguments, e.g. x.k() != weights.k().
void matmul(const PackedWeights& weights, const QuantizedActivations& x, const MatmulArgs& args);

// That matmul() as tiles, for a caller that runs them in a pool job of its own (KleidiAI's way:
// the caller owns the threads): the constructor checks the arguments as matmul() does (x may be
// only reserved yet) and splits the output for the threads of args.pool and args.max_threads;
// run(t) computes tile t < count(), from any thread, once each, after every row of x is
// quantized. Nothing is allocated: each tile takes the scratch it needs from its thread's.
class MatmulTiles {
 public:
  MatmulTiles(const PackedWeights& weights, const QuantizedActivations& x, const MatmulArgs& args);
  // The same over rows [first_row, first_row + args.m) of x only (y's row 0 is x's first_row).
  MatmulTiles(const PackedWeights& weights, const QuantizedActivations& x, int64_t first_row,
              const MatmulArgs& args);
  int64_t count() const { return split_.tiles(); }
  void run(int64_t t) const;

 private:
  const PackedWeights* weights_;
  const QuantizedActivations* x_;
  int64_t first_row_ = 0;
  MatmulArgs args_;
  TileSplit split_;
  // Row tile r's scratch owner is first_owner_ + r: unique to this call and these rows.
  uint64_t first_owner_ = 0;
};

}  // namespace dq4::w4a8
