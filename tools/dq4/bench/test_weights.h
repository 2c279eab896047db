#pragma once
// Random operands for benchmarks: int4 weights in the checkpoint's pack-quantized form, their
// scales, the same weights dequantized to f32 (for an f32 baseline) and normal activations.

#include <cstdint>
#include <vector>

#include "dq4/kernels/aligned_buffer.h"
#include "dq4/kernels/int4.h"

namespace dq4::cli::bench {

// Int4 weights [n, k] with one f32 scale per output channel (group 0) or per group of k.
struct Int4Weights {
  int64_t n = 0, k = 0, group = 0;
  const int32_t* nibbles = nullptr;  // [n, ceil(k / 8)]: nibble q + 8, LSB first; not owned
  std::vector<float> scales;         // [n, groups]

  int64_t groups() const { return group == 0 ? 1 : (k + group - 1) / group; }
  int4::WeightSource source() const;
  // The f32 matrix [n, k] row-major that the int4 weights stand for (q x scale).
  AlignedBuffer dequantized() const;
};

// Uniform random nibbles for an [n, k] matrix; deterministic in (n, k, seed).
std::vector<int32_t> random_nibbles(int64_t n, int64_t k, uint64_t seed);
// Int4 weights over `nibbles` (which must outlive them) with random positive scales for `group`
// (0 = channelwise).
Int4Weights random_int4_weights(const std::vector<int32_t>& nibbles, int64_t n, int64_t k,
                                int64_t group, uint64_t seed);
// `count` standard-normal f32 values.
std::vector<float> random_normal(size_t count, uint64_t seed);

}  // namespace dq4::cli::bench
