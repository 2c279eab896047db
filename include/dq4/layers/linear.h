#pragma once
// One linear layer of a model, whatever its checkpoint holds: W4A8 (int4 weights x dynamic int8
// activations), W4A16 (int4 weights x f32 activations) or dense (BF16/F32/F16 weights), with
// optional bias. The model code calls forward() and never asks which kernel runs.
//
// Layers that share an input (Q/K/V, gate/up) are loaded together as one Linear whose outputs are
// the parts' outputs side by side; parts whose kinds match are packed into one matrix (one kernel
// call), the others stay separate parts of the same layer.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dq4/io/checkpoint.h"
#include "dq4/io/model_config.h"
#include "dq4/io/quant_config.h"
#include "dq4/io/tensor_view.h"
#include "dq4/kernels/function_ref.h"

namespace dq4 {

class ThreadPool;

// Choices the user makes at load time; the defaults run every module as its checkpoint says.
struct LinearOptions {
  // Run W4A16 modules on the W4A8 kernels (activations quantized to int8 per token), trading
  // accuracy for int8 dot-product speed. Never done unless asked (`--activations int8`).
  bool w4a16_as_w4a8 = false;
  // Quantize dense modules at load to W4A8 (int4 weights by round-to-nearest as compressed-
  // tensors computes it, int8 dynamic activations): nullopt = keep them dense, 0 = one scale per
  // output channel, G = groups of G along K (a multiple of 32). (`--quantize-dense`.)
  std::optional<int64_t> quantize_dense_group;
};

// What one part of a Linear runs.
enum class LinearRun { w4a8, w4a16, dense_bf16, dense_f32 };
std::string_view linear_run_name(LinearRun run);  // "W4A8", "W4A16", "dense BF16", "dense F32"

// What a Linear::forward() does besides its product, in the same pool job: a layer's work in
// one hand-off instead of one per step.
struct LinearPass {
  // Add the product to what y holds (one f32 add per output, after bias and clamp: what a
  // separate pass adding the stored product would give, bit for bit), e.g. a residual stream.
  bool accumulate = false;
  // Called on ranges of rows [r0, r1) that together cover [0, m) once each, from any thread of
  // the job: `before` just before rows r0..r1 of x are read (it may write them: e.g. the norm
  // that makes them), `after` once every output of those rows is written (e.g. rotary embeddings
  // of them). Neither may run another Linear.
  FunctionRef<void(int64_t, int64_t)> before = {}, after = {};
};

class Linear {
 public:
  Linear();
  ~Linear();
  Linear(Linear&&) noexcept;
  Linear& operator=(Linear&&) noexcept;

  // Loads the modules of `modules` (all with the same in_features) as one layer, fusing the
  // consecutive modules whose resolved kinds, group sizes and scale types match. Throws
  // dq4::Error naming the module for anything the checkpoint or the config gets wrong.
  static Linear load(const Checkpoint& checkpoint, const QuantizationConfig& config,
                     std::span<const LinearModule> modules, const LinearOptions& options = {});
  // A dense [N, K] weight tensor used as a layer, e.g. tied embeddings as the head.
  static Linear from_dense_tensor(const TensorView& weight, const LinearOptions& options = {});

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  // Bytes of packed weights held.
  size_t bytes() const;
  // "W4A8 g32 [avx512_vnni] q_proj+k_proj+v_proj | W4A16 channel [avx512f] ...": what runs.
  std::string description() const;
  // The parts in output order: what each runs and which output columns it fills.
  struct PartInfo {
    LinearRun run;
    int64_t group_size;  // int4 parts; 0 = channelwise
    int64_t first_column, columns;
    std::vector<std::string> modules;
    std::string kernel;  // the variant that runs it (types, ISA, tiles)
  };
  std::vector<PartInfo> parts() const;

  // y[m, out_features] (row stride ldy) = x[m, in_features] (row stride ldx) . W^T + bias, or
  // with pass.accumulate y += that: in one job over the pool (`pool`, default the global pool).
  void forward(const float* x, int64_t m, int64_t ldx, float* y, int64_t ldy,
               ThreadPool* pool = nullptr, const LinearPass& pass = {}) const;

  struct Part;  // opaque: packed weights of one kernel family (src/layers/linear_part.h)

 private:
  friend class Experts;
  std::vector<std::unique_ptr<Part>> parts_;
  int64_t in_features_ = 0, out_features_ = 0;
};

}  // namespace dq4
