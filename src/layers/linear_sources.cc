#include "linear_sources.h"

#include <algorithm>
#include <cstring>

#include "dq4/kernels/error.h"
#include "dq4/kernels/half.h"
#include "dq4/kernels/int4_codec.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/quant/rtn.h"

namespace dq4::layers {
namespace {

float widen(Dtype dtype, const uint8_t* p) {
  uint16_t h;
  switch (dtype) {
    case Dtype::F32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case Dtype::BF16:
      std::memcpy(&h, p, 2);
      return bf16_to_f32(h);
    case Dtype::F16:
      std::memcpy(&h, p, 2);
      return f16_to_f32(h);
    default:
      throw Error("internal: widen() of a non-float dtype");
  }
}

// memcpy over the pool in 2 MiB pieces: stacking fused modules (~34 MB per layer for an MLP) on
// one thread makes a large share of the load serial, its first writes faulting in the
// destination's pages and its reads the checkpoint's, while the other threads idle.
void copy_in_parallel(void* to, const void* from, size_t bytes) {
  constexpr size_t kPiece = size_t{2} << 20;
  auto* dst = static_cast<uint8_t*>(to);
  const auto* src = static_cast<const uint8_t*>(from);
  ThreadPool::global().run(static_cast<int64_t>((bytes + kPiece - 1) / kPiece), [&](int64_t i) {
    const size_t begin = static_cast<size_t>(i) * kPiece;
    std::memcpy(dst + begin, src + begin, std::min(kPiece, bytes - begin));
  });
}

std::vector<float> widen_all(const TensorView& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  const size_t size = dtype_size(t.dtype);
  for (size_t i = 0; i < out.size(); ++i) out[i] = widen(t.dtype, t.data + i * size);
  return out;
}

int4::ScaleType scale_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::F32:
      return int4::ScaleType::f32;
    case Dtype::BF16:
      return int4::ScaleType::bf16;
    case Dtype::F16:
      return int4::ScaleType::f16;
    default:
      throw Error("internal: scale_type() of a non-float dtype");
  }
}

int64_t total_rows(std::span<const LinearTensors> modules) {
  int64_t n = 0;
  for (const LinearTensors& t : modules) n += t.n;
  return n;
}

// Scales [N, groups] of every module stacked: their common dtype when they agree (a lossless
// copy), else f32 (every scale dtype widens to f32 exactly).
void stack_scales(std::span<const TensorView* const> scales, Int4Source& out) {
  bool same = true;
  for (const TensorView* s : scales) same = same && s->dtype == scales[0]->dtype;
  if (same) {
    for (const TensorView* s : scales)
      out.scales.insert(out.scales.end(), s->data, s->data + s->bytes);
    out.source.scale_type = scale_type(scales[0]->dtype);
  } else {
    for (const TensorView* s : scales) {
      const std::vector<float> f = widen_all(*s);
      const auto* bytes = reinterpret_cast<const uint8_t*>(f.data());
      out.scales.insert(out.scales.end(), bytes, bytes + f.size() * 4);
    }
    out.source.scale_type = int4::ScaleType::f32;
  }
  out.source.scales = out.scales.data();
}

}  // namespace

std::vector<float> gather_bias(std::span<const LinearTensors> modules) {
  bool any = false;
  for (const LinearTensors& t : modules) any = any || t.bias != nullptr;
  if (!any) return {};
  std::vector<float> bias;
  bias.reserve(static_cast<size_t>(total_rows(modules)));
  for (const LinearTensors& t : modules) {
    if (t.bias == nullptr) {
      bias.insert(bias.end(), static_cast<size_t>(t.n), 0.0f);
    } else {
      const std::vector<float> b = widen_all(*t.bias);
      bias.insert(bias.end(), b.begin(), b.end());
    }
  }
  return bias;
}

namespace {

// Quantizes `weight` in row blocks, in parallel, straight into pack-quantized `words` [rows,
// ceil(cols / 8)], and returns its scales: the matrix is never held as int8, so quantizing an
// lm_head at load costs half its int4 size in temporaries.
std::vector<uint8_t> quantize_into_words(const TensorView& weight, int64_t group_size,
                                         int32_t* words) {
  const int64_t rows = weight.shape[0], cols = weight.shape[1];
  const int64_t groups = rtn_groups(cols, group_size), words_per_row = (cols + 7) / 8;
  const size_t scale_bytes = dtype_size(weight.dtype);
  std::vector<uint8_t> scales(static_cast<size_t>(rows * groups) * scale_bytes);
  const int64_t rows_per_task = std::max<int64_t>(1, (int64_t{1} << 16) / cols);
  ThreadPool::global().run((rows + rows_per_task - 1) / rows_per_task, [&](int64_t task) {
    const int64_t begin = task * rows_per_task, end = std::min(rows, begin + rows_per_task);
    thread_local std::vector<int8_t> values;
    values.resize(static_cast<size_t>((end - begin) * cols));
    rtn_quantize_rows(weight, group_size, begin, end, values.data(),
                      scales.data() + begin * groups * scale_bytes);
    pack_int4_rows(values.data(), end - begin, cols, words + begin * words_per_row);
  });
  return scales;
}

}  // namespace

Int4Source gather_int4(std::span<const LinearTensors> modules, int64_t group_size) {
  Int4Source out;
  out.bias = gather_bias(modules);
  if (modules.size() == 1 && modules[0].scheme.kind != LinearKind::dense) {
    out.source = modules[0].int4_source();  // in place, no copy
  } else {
    // One encoding for the stacked rows: the checkpoint's int8 values when every module has them
    // (copied as they are), else pack-quantized words (half the bytes; dense modules are
    // quantized straight into them).
    const bool as_values = std::all_of(modules.begin(), modules.end(), [](const LinearTensors& t) {
      return t.scheme.kind != LinearKind::dense && t.int4_source().values != nullptr;
    });
    const int64_t k = modules[0].k, words_per_row = (k + 7) / 8;
    const int64_t rows = total_rows(modules);
    out.stacked = AlignedBuffer(static_cast<size_t>(
        as_values ? rows * k : rows * words_per_row * static_cast<int64_t>(sizeof(int32_t))));
    auto* values = reinterpret_cast<int8_t*>(out.stacked.data());
    auto* all_words = reinterpret_cast<int32_t*>(out.stacked.data());
    std::vector<std::vector<uint8_t>> dense_scales;  // alive until stack_scales copies them
    dense_scales.reserve(modules.size());
    std::vector<TensorView> scale_views;
    scale_views.reserve(modules.size());
    int64_t row = 0;
    for (const LinearTensors& t : modules) {
      int32_t* words = as_values ? nullptr : all_words + row * words_per_row;
      if (t.scheme.kind == LinearKind::dense) {
        dense_scales.push_back(quantize_into_words(*t.weight, group_size, words));
        TensorView v;
        v.name = t.module + ".weight_scale";
        v.dtype = t.weight->dtype;
        v.shape = {t.n, rtn_groups(k, group_size)};
        v.data = dense_scales.back().data();
        v.bytes = dense_scales.back().size();
        scale_views.push_back(std::move(v));
      } else {
        const int4::WeightSource s = t.int4_source();
        if (as_values) {
          copy_in_parallel(values + row * k, s.values, static_cast<size_t>(s.n * k));
        } else if (s.packed != nullptr) {
          copy_in_parallel(words, s.packed,
                           static_cast<size_t>(s.n * words_per_row) * sizeof(int32_t));
        } else {
          try {
            pack_int4_rows(s.values, s.n, k, words);
          } catch (const Error& e) {
            throw Error("module '" + t.module + "': " + e.what());
          }
        }
        scale_views.push_back(*t.weight_scale);
      }
      row += t.n;
    }
    std::vector<const TensorView*> scales;
    for (const TensorView& v : scale_views) scales.push_back(&v);
    stack_scales(scales, out);
    out.source.n = total_rows(modules);
    out.source.k = k;
    out.source.group_size = group_size;
    if (as_values)
      out.source.values = values;
    else
      out.source.packed = all_words;
  }
  out.source.bias = out.bias.empty() ? nullptr : out.bias.data();
  return out;
}

DenseSource gather_dense(std::span<const LinearTensors> modules) {
  DenseSource out;
  out.bias = gather_bias(modules);
  bool all_bf16 = true, all_f32 = true;
  for (const LinearTensors& t : modules) {
    all_bf16 = all_bf16 && t.weight->dtype == Dtype::BF16;
    all_f32 = all_f32 && t.weight->dtype == Dtype::F32;
  }
  out.source.n = total_rows(modules);
  out.source.k = modules[0].k;
  if (modules.size() == 1 && (all_bf16 || all_f32 || modules[0].weight->dtype == Dtype::F16)) {
    const Dtype d = modules[0].weight->dtype;
    out.source.data = modules[0].weight->data;
    out.source.type = d == Dtype::BF16  ? dense::WeightType::bf16
                      : d == Dtype::F32 ? dense::WeightType::f32
                                        : dense::WeightType::f16;
  } else if (all_bf16) {
    for (const LinearTensors& t : modules)
      out.data.insert(out.data.end(), t.weight->data, t.weight->data + t.weight->bytes);
    out.source.data = out.data.data();
    out.source.type = dense::WeightType::bf16;
  } else {
    for (const LinearTensors& t : modules) {
      const std::vector<float> f = widen_all(*t.weight);
      const auto* bytes = reinterpret_cast<const uint8_t*>(f.data());
      out.data.insert(out.data.end(), bytes, bytes + f.size() * 4);
    }
    out.source.data = out.data.data();
    out.source.type = dense::WeightType::f32;
  }
  out.source.bias = out.bias.empty() ? nullptr : out.bias.data();
  return out;
}

}  // namespace dq4::layers
