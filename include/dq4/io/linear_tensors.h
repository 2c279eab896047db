#pragma once
// The tensors of one linear module in a checkpoint, found and checked against its resolved scheme
// (shared/docs/checkpoint-format-and-math.md §2.1): the format decides which tensors must exist,
// and the dtypes and shapes actually present must agree with it.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dq4/io/checkpoint.h"
#include "dq4/io/model_config.h"
#include "dq4/io/quant_config.h"
#include "dq4/io/tensor_view.h"
#include "dq4/kernels/int4.h"

namespace dq4 {

struct LinearTensors {
  std::string module;
  LinearScheme scheme;
  int64_t n = 0;  // out_features
  int64_t k = 0;  // in_features
  // dense: F32/BF16/F16 [n, k]. int-quantized: I8 [n, k] with values in [-8, 7].
  const TensorView* weight = nullptr;
  const TensorView* weight_packed = nullptr;  // pack-quantized: I32 [n, ceil(k / 8)]
  const TensorView* weight_scale = nullptr;   // int4 kinds: F32/BF16/F16 [n, groups]
  const TensorView* bias = nullptr;           // optional: F32/BF16/F16 [n]
  // A stacked expert's slices of the checkpoint's tensors, which the pointers above point into.
  std::shared_ptr<const std::vector<TensorView>> slices;

  // int4 kinds: the weights as the kernel library takes them, pointing into the checkpoint
  // (bias left out: the caller converts it to f32). Throws for dense modules.
  int4::WeightSource int4_source() const;
  // Bytes the checkpoint spends on this module (weights, scales, bias).
  size_t bytes() const;
};

// Finds and checks the tensors of `module` under `scheme`. Throws dq4::Error naming the module,
// the tensor and the file for a missing tensor, a dtype or shape that disagrees with the format,
// or tensors dq4 does not run (weight_zero_point, weight_g_idx).
LinearTensors find_linear_tensors(const Checkpoint& checkpoint, std::string_view module,
                                  const LinearScheme& scheme);
// The same for a LinearModule, which may be one expert of stacked tensors (their leading
// dimension must be the module's stacked_experts).
LinearTensors find_linear_tensors(const Checkpoint& checkpoint, const LinearModule& module,
                                  const LinearScheme& scheme);

// Throws dq4::Error naming the module when its tensors are not of the shape config.json gives
// (out_features x in_features).
void check_linear_shape(const LinearTensors& tensors, const LinearModule& module);

}  // namespace dq4
