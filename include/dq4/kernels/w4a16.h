#pragma once
// W4A16 "weight-only" matrix multiply: int4 symmetric weights (one scale per output channel or
// per group of G along K, exactly as W4A8 takes them) times f32 activations, the weights
// dequantized in registers, giving f32. The default path for W4A16 checkpoints
// (compressed-tensors pack-quantized, as llm-compressor writes them).
//
// The exact math, of the scalar reference and of every variant, bit for bit and for any number of
// threads. For each output (m, n), with q[n][k] in [-8, 7], groups g of G consecutive k (the last
// one possibly shorter; channelwise: one group spanning K) and s[n][g] the checkpoint's scale
// widened exactly to f32:
//   out = 0
//   for each group g in order:
//     acc = 0; for k in g, in order: acc = fma(x[m][k], float(q[n][k]), acc)
//     out = fma(acc, s[n][g], out)
//   y = out + bias[n]   (bias 0 when absent)
//   y = y > min ? y : min;  y = y < max ? y : max
// Each fma rounds once (lanes = output columns, so SIMD FMA reproduces it exactly).
//
// Packing: the layout of the W4A8 family (src/kernels/int4/layout.h), so one packed copy serves
// both families. w4a16::pack() of channelwise weights or bf16 group scales is byte-identical to
// w4a8::pack() for the W4A8 kernel of the same panel width; f32 and f16 group scales are kept
// exactly as f32 (W4A8 rounds them to bf16), and such packs are W4A16-only. matmul() also runs
// directly on w4a8::PackedWeights (where group scales are the bf16-rounded ones).
//
// Usage: pack the weights once with pack(), then call matmul() as often as needed.

#include <cstdint>

#include "dq4/kernels/aligned_buffer.h"
#include "dq4/kernels/int4.h"
#include "dq4/kernels/kernel_family.h"
#include "dq4/kernels/matmul_args.h"
#include "dq4/kernels/w4a8.h"

namespace dq4 {
class ThreadPool;
}

namespace dq4::w4a16 {

// One implementation of the family (scalar reference or one ISA). Opaque; see family().
struct Kernel;

// The kernels compiled into this build ("reference", "avx2", "avx512f", "neon") and the choice
// among them: default_kernel() is the best this CPU supports, or the one DQ4_ISA asks for
// (dq4/kernels/kernel_family.h: a W4A8 name such as avx512_vnni leaves W4A16 on its automatic
// choice).
const KernelFamily<Kernel>& family();

}  // namespace dq4::w4a16

// Instantiated once, by the family's registry.cc (where Kernel is complete).
extern template class dq4::KernelFamily<dq4::w4a16::Kernel>;

namespace dq4::w4a16 {

using MatmulArgs = dq4::MatmulArgs;

// Packed weights: owned, aligned, in the shared int4 layout for the kernel that packed them.
class PackedWeights {
 public:
  PackedWeights() = default;

  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  // 0 when channelwise.
  int64_t group_size() const { return group_size_; }
  // Whether group scales are held as f32 (the source's were f32 or f16; a W4A16-only pack).
  bool f32_group_scales() const { return f32_group_scales_; }
  const Kernel& kernel() const { return *kernel_; }
  size_t bytes() const { return data_.size(); }
  const uint8_t* data() const { return data_.data(); }

 private:
  friend PackedWeights pack(const int4::WeightSource&, const Kernel&, ThreadPool*);
  AlignedBuffer data_;
  const Kernel* kernel_ = nullptr;
  int64_t n_ = 0, k_ = 0, group_size_ = 0;
  bool f32_group_scales_ = false;
};

// Packs `source` for `kernel` (multi-threaded over `pool`, default the global pool).
// Throws dq4::Error naming the field for any invalid input.
PackedWeights pack(const int4::WeightSource& source, const Kernel& kernel,
                   ThreadPool* pool = nullptr);
inline PackedWeights pack(const int4::WeightSource& source) {
  return pack(source, family().default_kernel());
}

// Y = clamp(X . dequant(W)^T + bias). Throws dq4::Error on invalid arguments, including
// activations that are not finite.
void matmul(const PackedWeights& weights, const MatmulArgs& args);
// The same math on weights packed for W4A8 (no copy), with the group scales they hold. Runs the
// W4A16 kernel chosen as family().default_kernel() when its panel width matches theirs, else the
// best supported one that matches, else the reference.
void matmul(const w4a8::PackedWeights& weights, const MatmulArgs& args);

// matmul() in pieces, for a caller that runs them in a pool job of its own (KleidiAI's way: the
// caller owns the threads): the constructor checks the arguments as matmul() does and splits the
// output for the threads of args.pool and args.max_threads; prepare_rows(m0, m1) checks rows
// [m0, m1) of args.x (from any thread) and returns the first holding a NaN or an infinity, or -1;
// run(t) computes tile t < count(), from any thread, once each, after every row is checked.
// Nothing is allocated. The weights and args.x must outlive the tiles.
class MatmulTiles {
 public:
  MatmulTiles(const PackedWeights& weights, const MatmulArgs& args);
  MatmulTiles(const w4a8::PackedWeights& weights, const MatmulArgs& args);
  int64_t prepare_rows(int64_t m0, int64_t m1) const;
  int64_t count() const { return split_.tiles(); }
  void run(int64_t t) const;

 private:
  const Kernel* kernel_;
  const uint8_t* packed_;
  int64_t n_, k_, group_size_, nr_;
  bool f32_group_scales_;
  MatmulArgs args_;
  TileSplit split_;
};

}  // namespace dq4::w4a16
