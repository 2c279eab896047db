// Round-to-nearest int4 quantization, bit for bit as compressed-tensors computes it (see rtn.h).

#include "dq4/quant/rtn.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "dq4/kernels/error.h"
#include "dq4/kernels/half.h"
#include "dq4/kernels/thread_pool.h"

namespace dq4 {
namespace {

// How one dtype is read, rounded to and written.
struct F32Traits {
  using Raw = float;
  static float load(float v) { return v; }
  static float round(float v) { return v; }
  static float store(float v) { return v; }
};
struct BF16Traits {
  using Raw = uint16_t;
  static float load(uint16_t v) { return bf16_to_f32(v); }
  static float round(float v) { return round_to_bf16(v); }
  static uint16_t store(float v) { return f32_to_bf16(v); }
};
struct F16Traits {
  using Raw = uint16_t;
  static float load(uint16_t v) { return f16_to_f32(v); }
  static float round(float v) { return round_to_f16(v); }
  static uint16_t store(float v) { return f32_to_f16(v); }
};

std::string where(const TensorView& w) { return "tensor \"" + w.name + "\" in " + w.file; }

[[noreturn]] void fail_not_finite(const TensorView& w, int64_t row, const float* values,
                                  int64_t cols) {
  int64_t col = 0;
  while (col < cols && std::isfinite(values[col])) ++col;
  throw Error(where(w) + ": weight[" + std::to_string(row) + "][" + std::to_string(col) + "] is " +
              (std::isnan(values[col]) ? "NaN" : "infinite") + "; cannot quantize it");
}

// Finite, non-negative floats order as their bit patterns do. Integer operations keep these
// loops free of floating-point comparisons, which the compiler would not vectorize.
constexpr uint32_t kAbsMask = 0x7fffffffu, kExponentMask = 0x7f800000u;

// Widens n raw values into `out`; false when one of them is NaN or infinite.
template <typename Traits>
bool widen_row(const typename Traits::Raw* src, int64_t n, float* out) {
  uint32_t finite = 1;
  for (int64_t c = 0; c < n; ++c) {
    out[c] = Traits::load(src[c]);
    finite &= (f32_to_bits(out[c]) & kExponentMask) != kExponentMask;
  }
  return finite != 0;
}

// The largest |x| of n finite values (0 for none).
float absolute_max(const float* x, int64_t n) {
  int32_t m = 0;  // as bits: a positive int32 for every finite |x|
  for (int64_t c = 0; c < n; ++c)
    m = std::max(m, static_cast<int32_t>(f32_to_bits(x[c]) & kAbsMask));
  return bits_to_f32(static_cast<uint32_t>(m));
}

// q = clamp(round_half_even(to_dtype(x / scale)), -8, 7) for n finite values, with no
// floating-point comparison so that the compiler vectorizes it (under the default
// -ftrapping-math it leaves float selects as branches). |x| <= absmax and scale is absmax / 7.5
// rounded to the dtype (a subnormal scale may lose up to a third) or eps where that is 0, so |x /
// scale| stays below 16: adding and removing 1.5 * 2^23 rounds it to an integer, nearest even
// (torch.round), and the clamp can follow in int32.
template <typename Traits>
void quantize_group(const float* x, int64_t n, float scale, int8_t* q) {
  for (int64_t c = 0; c < n; ++c) {
    const float rounded = (Traits::round(x[c] / scale) + 12582912.0f) - 12582912.0f;
    q[c] = static_cast<int8_t>(std::clamp(static_cast<int32_t>(rounded), -8, 7));
  }
}

template <typename Traits>
void quantize_rows(const TensorView& w, std::span<const typename Traits::Raw> raw,
                   int64_t group_size, int64_t row_begin, int64_t row_end, int8_t* values,
                   uint8_t* scales) {
  const int64_t cols = w.shape[1];
  const int64_t group = group_size == 0 ? cols : group_size;
  const int64_t groups = rtn_groups(cols, group_size);
  const float eps = dtype_epsilon(w.dtype);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = row_begin; r < row_end; ++r) {
    const typename Traits::Raw* src = raw.data() + r * cols;
    if (!widen_row<Traits>(src, cols, row.data())) fail_not_finite(w, r, row.data(), cols);
    int8_t* q = values ? values + (r - row_begin) * cols : nullptr;
    auto* scale_out = scales + (r - row_begin) * groups * sizeof(typename Traits::Raw);
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t begin = g * group, end = std::min(cols, begin + group);
      float scale = Traits::round(absolute_max(row.data() + begin, end - begin) / 7.5f);
      if (scale == 0.0f) scale = eps;
      const typename Traits::Raw stored = Traits::store(scale);
      std::memcpy(scale_out + g * sizeof stored, &stored, sizeof stored);
      if (q != nullptr) quantize_group<Traits>(row.data() + begin, end - begin, scale, q + begin);
    }
  }
}

}  // namespace

int64_t rtn_groups(int64_t cols, int64_t group_size) {
  return group_size == 0 ? 1 : (cols + group_size - 1) / group_size;
}

float dtype_epsilon(Dtype dtype) {
  switch (dtype) {
    case Dtype::BF16:
      return 0.0078125f;  // 2^-7
    case Dtype::F16:
      return 0.0009765625f;  // 2^-10
    case Dtype::F32:
      return FLT_EPSILON;  // 2^-23
    default:
      throw Error("dtype_epsilon: " + std::string(dtype_name(dtype)) + " is not a float dtype");
  }
}

void rtn_quantize_rows(const TensorView& weight, int64_t group_size, int64_t row_begin,
                       int64_t row_end, int8_t* values, uint8_t* scales) {
  if (weight.shape.size() != 2)
    throw Error(where(weight) + " has shape " + weight.shape_string() + ", not [rows, cols]");
  if (group_size < 0)
    throw Error("rtn_quantize: group size " + std::to_string(group_size) + " is negative");
  if (row_begin < 0 || row_begin > row_end || row_end > weight.shape[0])
    throw Error(where(weight) + ": rows [" + std::to_string(row_begin) + ", " +
                std::to_string(row_end) + ") are outside " + weight.shape_string());
  switch (weight.dtype) {
    case Dtype::F32:
      return quantize_rows<F32Traits>(weight, weight.as<float>(), group_size, row_begin, row_end,
                                      values, scales);
    case Dtype::BF16:
      return quantize_rows<BF16Traits>(weight, weight.as<uint16_t>(Dtype::BF16), group_size,
                                       row_begin, row_end, values, scales);
    case Dtype::F16:
      return quantize_rows<F16Traits>(weight, weight.as<uint16_t>(Dtype::F16), group_size,
                                      row_begin, row_end, values, scales);
    default:
      throw Error(where(weight) + " is " + std::string(dtype_name(weight.dtype)) +
                  "; only F32, BF16 and F16 weights can be quantized");
  }
}

namespace {

RtnResult quantize_matrix(const TensorView& weight, int64_t group_size, ThreadPool* pool,
                          bool with_values) {
  if (weight.shape.size() != 2)
    throw Error(where(weight) + " has shape " + weight.shape_string() + ", not [rows, cols]");
  RtnResult r;
  r.rows = weight.shape[0];
  r.cols = weight.shape[1];
  r.groups = rtn_groups(r.cols, group_size);
  const size_t scale_bytes = dtype_size(weight.dtype);
  if (with_values) r.values.resize(static_cast<size_t>(r.rows * r.cols));
  r.scales.resize(static_cast<size_t>(r.rows * r.groups) * scale_bytes);
  // Tasks of about 64K weights: enough to balance the pool, few enough to cost nothing.
  const int64_t rows_per_task =
      std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, r.cols));
  const int64_t tasks = (r.rows + rows_per_task - 1) / rows_per_task;
  (pool ? *pool : ThreadPool::global()).run(tasks, [&](int64_t task) {
    const int64_t begin = task * rows_per_task, end = std::min(r.rows, begin + rows_per_task);
    rtn_quantize_rows(weight, group_size, begin, end,
                      with_values ? r.values.data() + begin * r.cols : nullptr,
                      r.scales.data() + begin * r.groups * scale_bytes);
  });
  return r;
}

}  // namespace

RtnResult rtn_quantize(const TensorView& weight, int64_t group_size, ThreadPool* pool) {
  return quantize_matrix(weight, group_size, pool, true);
}

RtnResult rtn_scales(const TensorView& weight, int64_t group_size, ThreadPool* pool) {
  return quantize_matrix(weight, group_size, pool, false);
}

}  // namespace dq4
