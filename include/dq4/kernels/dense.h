#pragma once
// Dense linear layers: f32 activations times unquantized weights (BF16 kept BF16 in memory, F32
// kept F32), giving f32 (llm-compressor leaves lm_head unquantized):
//
//   Y[M, N] = clamp(X[M, K] . W[N, K]^T + bias, min, max)
//
// The exact math (reference, avx2, avx512f, neon: family().exact(); bit for bit and for any
// number of threads): each output is one chain of fused multiply-adds in k order,
//   acc = 0; for k = 0 .. K-1: acc = fma(x[m][k], w[n][k], acc)   (one rounding per step)
//   y = acc + bias[n]   (bias 0 when absent)
//   y = y > min ? y : min;  y = y < max ? y : max
// with w[n][k] the stored weight widened exactly to f32.
//
// The "avx512_bf16" (VDPBF16PS) and "neon_bf16" (BFDOT) variants compute a different sum, so
// they are never chosen automatically; force one with DQ4_ISA=avx512_bf16 (or
// dense:avx512_bf16; likewise neon_bf16). For BF16 weights:
//   xb[k] = x[m][k] rounded to bf16 (nearest, ties to even; x86 may flush denormals to 0);
//   acc = 0; for each pair (2i, 2i+1), i = 0 .. ceil(K/2)-1 (a missing k+1 counts as 0), acc
//   gains xb[2i] w[n][2i] + xb[2i+1] w[n][2i+1] as the instruction defines it: VDPBF16PS
//   (Intel SDM) as acc = fma(xb[2i+1], w[n][2i+1], acc); acc = fma(xb[2i], w[n][2i], acc) with
//   denormal inputs read as 0 and denormal results flushed; BFDOT with Arm's own intermediate
//   rounding (which FEAT_EBF16 and FPCR.EBF may change);
//   then bias and clamp as above. Its error against the exact real product is bounded by
//     |y - e| <= (2^-8 + (K + 2) 2^-23) sum_k |x w| + 2^-23 |e| + 2^-126 (sum_k |w| + 2K)
//   with e = sum_k x w + bias (before the clamp, which only shrinks the error),
//   which the tests check for every case. F32 (and F16) weights get the exact math in every
//   variant, avx512_bf16 included. Inputs near FLT_MAX may round to bf16 infinity.
//
// Usage: pack the weights once with pack(), then call matmul() as often as needed.

#include <cstdint>

#include "dq4/kernels/aligned_buffer.h"
#include "dq4/kernels/kernel_family.h"
#include "dq4/kernels/matmul_args.h"

namespace dq4 {
class ThreadPool;
}

namespace dq4::dense {

// One implementation of the family (scalar reference or one ISA). Opaque; see family().
struct Kernel;

// The kernels compiled into this build ("reference", "avx2", "avx512f", "avx512_bf16", "neon",
// "neon_bf16") and the choice among them: default_kernel() is the best exact kernel this CPU
// supports, or the one DQ4_ISA asks for: a comma-separated list of `<kernel>` or
// `dense:<kernel>` entries (dq4/kernels/kernel_family.h). A plain name the dense family lacks
// (e.g. avx512_vnni) keeps the automatic choice. exact() is false for avx512_bf16 and neon_bf16,
// which differ from the exact math above on BF16 weights only.
const KernelFamily<Kernel>& family();

}  // namespace dq4::dense

// Instantiated once, by the family's registry.cc (where Kernel is complete).
extern template class dq4::KernelFamily<dq4::dense::Kernel>;

namespace dq4::dense {

// F32 and BF16 weights are packed as they are; F16 weights are widened (exactly) to F32.
enum class WeightType { f32, bf16, f16 };

// Weights as a checkpoint holds them: [n, k] row-major (row stride k), finite.
struct WeightSource {
  int64_t n = 0;  // output channels (rows of W)
  int64_t k = 0;  // input features
  const void* data = nullptr;
  WeightType type = WeightType::bf16;
  const float* bias = nullptr;  // [n] or null
};

// Packed weights: owned, aligned, in the layout of the kernel that packed them, bias included.
class PackedWeights {
 public:
  PackedWeights() = default;

  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  // The element type held: bf16, or f32 (for f32 and f16 sources).
  WeightType element() const { return element_; }
  const Kernel& kernel() const { return *kernel_; }
  size_t bytes() const { return data_.size(); }
  const uint8_t* data() const { return data_.data(); }

 private:
  friend PackedWeights pack(const WeightSource&, const Kernel&, ThreadPool*);
  AlignedBuffer data_;
  const Kernel* kernel_ = nullptr;
  int64_t n_ = 0, k_ = 0;
  WeightType element_ = WeightType::bf16;
};

// Packs `source` for `kernel` (multi-threaded over `pool`, default the global pool).
// Throws dq4::Error naming the field for any invalid input (sizes, null or misaligned pointers,
// non-finite weights or bias).
PackedWeights pack(const WeightSource& source, const Kernel& kernel, ThreadPool* pool = nullptr);
inline PackedWeights pack(const WeightSource& source) {
  return pack(source, family().default_kernel());
}

// Y = clamp(X . W^T + bias). Throws dq4::Error on invalid arguments (including non-finite
// activations). Kernels never allocate; the bf16-activation variants reuse a per-thread buffer
// for the bf16 X.
void matmul(const PackedWeights& weights, const MatmulArgs& args);

// matmul() in pieces, for a caller that runs them in a pool job of its own (KleidiAI's way: the
// caller owns the threads): the constructor checks the arguments as matmul() does and splits the
// output for the threads of args.pool and args.max_threads; prepare_rows(m0, m1) checks rows
// [m0, m1) of args.x (the bf16-activation variants also convert them), from any thread, and
// returns the first holding a NaN or an infinity, or -1; run(t) computes tile t < count(), from
// any thread, once each, after every row is prepared. Nothing is allocated once warm: converted
// rows go to a buffer of the constructing thread, which tiles made on that thread for the same
// args.x share (they write the same values). The weights and args.x must outlive the tiles.
class MatmulTiles {
 public:
  MatmulTiles(const PackedWeights& weights, const MatmulArgs& args);
  int64_t prepare_rows(int64_t m0, int64_t m1) const;
  int64_t count() const { return split_.tiles(); }
  void run(int64_t t) const;

 private:
  const PackedWeights* weights_;
  MatmulArgs args_;
  uint32_t* pairs_ = nullptr;  // the bf16 pairs of args.x, for the variants that read them
  int64_t ld_pairs_ = 0;
  TileSplit split_;
};

}  // namespace dq4::dense
