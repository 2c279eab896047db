#pragma once
// The weights of one Linear part, gathered from one or more checkpoint modules into what a kernel
// family's pack() takes. One module whose tensors already fit is used in place (no copy); several
// modules are concatenated along N (rows), converting to a common encoding where they differ.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dq4/io/linear_tensors.h"
#include "dq4/kernels/aligned_buffer.h"
#include "dq4/kernels/dense.h"
#include "dq4/kernels/int4.h"

namespace dq4::layers {

// An int4 source plus the buffers it may point into.
struct Int4Source {
  int4::WeightSource source;
  // The stacked rows: int8 values (every module int-quantized), else pack-quantized words. An
  // AlignedBuffer, not a vector: a fused MLP's values are ~34 MB per layer, which a vector would
  // memset in 4 KiB page faults before they are copied over.
  AlignedBuffer stacked;
  std::vector<uint8_t> scales;
  std::vector<float> bias;
};

// A dense source plus the buffers it may point into.
struct DenseSource {
  dense::WeightSource source;
  std::vector<uint8_t> data;
  std::vector<float> bias;
};

// The int4 weights of `modules` (same K) stacked along N, with `group_size` (0: channelwise).
// Int4 modules must have that group size already; dense ones are quantized here by
// round-to-nearest (compressed-tensors' math, scales in the weight's dtype).
Int4Source gather_int4(std::span<const LinearTensors> modules, int64_t group_size);

// The dense weights of `modules` (same K) stacked along N; BF16 stays BF16 when all are BF16,
// anything else is widened to F32.
DenseSource gather_dense(std::span<const LinearTensors> modules);

// The bias of `modules` as f32 (zeros for modules without one), or empty when none has one.
std::vector<float> gather_bias(std::span<const LinearTensors> modules);

}  // namespace dq4::layers
