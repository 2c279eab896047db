// Small f32 tensors of a checkpoint, and widening rows of 16-bit floats.

#include "weights.h"

#include <cstring>

#include "dq4/kernels/error.h"
#include "dq4/kernels/half.h"

namespace dq4::model {

void widen_row(const uint8_t* data, Dtype dtype, int64_t count, float* out) {
  if (dtype == Dtype::F32) {
    std::memcpy(out, data, static_cast<size_t>(count) * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, data + 2 * i, 2);
    out[i] = dtype == Dtype::BF16 ? bf16_to_f32(bits) : f16_to_f32(bits);
  }
}

void add_one(std::vector<float>& weights) {
  for (float& w : weights) w = 1.0f + w;
}

std::vector<float> read_vector(const Checkpoint& checkpoint, const std::string& name, int64_t size,
                               bool row_allowed) {
  const TensorView& t = checkpoint.tensor(name);
  if (t.dtype != Dtype::F32 && t.dtype != Dtype::BF16 && t.dtype != Dtype::F16)
    throw Error("tensor '" + name + "' in " + t.file + ": expected F32, BF16 or F16, got " +
                std::string(dtype_name(t.dtype)));
  const bool row = row_allowed && t.shape == std::vector<int64_t>{1, size};
  if (!row && (t.shape.size() != 1 || t.shape[0] != size))
    throw Error("tensor '" + name + "' in " + t.file + ": expected shape [" + std::to_string(size) +
                "]" + (row_allowed ? " or [1, " + std::to_string(size) + "]" : "") +
                " from config.json, got " + t.shape_string());
  std::vector<float> v(static_cast<size_t>(size));
  widen_row(t.data, t.dtype, size, v.data());
  return v;
}

}  // namespace dq4::model
