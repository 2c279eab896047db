#pragma once
// Reading the small f32 tensors of a model (norm weights) out of a checkpoint.

#include <cstdint>
#include <string>
#include <vector>

#include "dq4/io/checkpoint.h"

namespace dq4::model {

// The tensor `name` as f32 (F32, BF16 or F16 widened exactly). Throws dq4::Error naming the
// tensor and file when it is missing, of another dtype or not of shape [size] (or [1, size] with
// `row_allowed`: a one-row matrix, as Ernie 4.5 MoE stores its selection bias).
std::vector<float> read_vector(const Checkpoint& checkpoint, const std::string& name, int64_t size,
                               bool row_allowed = false);

// Gemma's RMSNorm multiplies by (1 + w), computed in f32 as transformers does: w becomes 1 + w.
void add_one(std::vector<float>& weights);

// Widens `count` values of `dtype` (F32, BF16 or F16) at `data` to f32.
void widen_row(const uint8_t* data, Dtype dtype, int64_t count, float* out);

}  // namespace dq4::model
