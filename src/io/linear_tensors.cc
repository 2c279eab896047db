// Finding one linear module's tensors and checking them against its scheme.

#include "dq4/io/linear_tensors.h"

#include <algorithm>

#include "dq4/kernels/error.h"

namespace dq4 {
namespace {

bool is_float_dtype(Dtype d) { return d == Dtype::F32 || d == Dtype::BF16 || d == Dtype::F16; }

std::string describe(const TensorView& t) {
  return "'" + t.name + "' (" + std::string(dtype_name(t.dtype)) + " " + t.shape_string() +
         ", in " + t.file + ")";
}

[[noreturn]] void fail(std::string_view module, const std::string& message) {
  throw Error("module '" + std::string(module) + "': " + message);
}

// A module's tensors as the checkpoint holds them, or one expert's slices of stacked ones: each
// [experts, ...] cut to [...], weight_shape [experts, N, K] to [N, K].
class ModuleTensors {
 public:
  ModuleTensors(const Checkpoint& checkpoint, std::string_view module, int64_t stacked,
                int64_t expert)
      : checkpoint_(checkpoint), module_(module), stacked_(stacked), expert_(expert) {
    if (expert_ >= 0) {
      if (expert_ >= stacked_)
        fail(module, "expert " + std::to_string(expert_) + " of " + std::to_string(stacked_));
      slices_ = std::make_shared<std::vector<TensorView>>();
      slices_->reserve(kMostSlices);  // the views stay where they are: callers point at them
    }
  }

  const TensorView* find(std::string_view suffix) {
    const TensorView* t = checkpoint_.find(module_ + "." + std::string(suffix));
    if (t == nullptr || expert_ < 0) return t;
    for (size_t i = 0; i < sources_.size(); ++i)
      if (sources_[i] == t) return &(*slices_)[i];  // sliced already
    if (slices_->size() == kMostSlices) throw Error("internal: too many slices of one module");
    sources_.push_back(t);
    TensorView& v = slices_->emplace_back(*t);
    v.name = t->name + " (expert " + std::to_string(expert_) + ")";
    if (suffix == "weight_shape") {
      const size_t size = t->dtype == Dtype::I64 ? 8 : 4;
      const int64_t leading = t->numel() == 3 && t->dtype == Dtype::I64   ? t->as<int64_t>()[0]
                              : t->numel() == 3 && t->dtype == Dtype::I32 ? t->as<int32_t>()[0]
                                                                          : -1;
      if (leading != stacked_)
        fail(module_, describe(*t) + ": expected I64 or I32 [" + std::to_string(stacked_) +
                          ", N, K] for " + std::to_string(stacked_) + " stacked experts");
      v.shape = {2};
      v.data += size;
      v.bytes = 2 * size;
      return &v;
    }
    if (t->shape.size() < 2 || t->shape[0] != stacked_)
      fail(module_, describe(*t) + ": expected " + std::to_string(stacked_) +
                        " stacked experts along its first dimension");
    v.shape.erase(v.shape.begin());
    v.bytes = t->bytes / static_cast<size_t>(stacked_);
    v.data += static_cast<size_t>(expert_) * v.bytes;
    return &v;
  }

  const TensorView& require(std::string_view suffix, const LinearScheme& scheme) {
    const TensorView* t = find(suffix);
    if (t == nullptr)
      fail(module_, "tensor '" + module_ + "." + std::string(suffix) + "' is missing from " +
                        checkpoint_.dir() + " (scheme " +
                        std::string(linear_kind_name(scheme.kind)) + ", format " +
                        std::string(weight_format_name(scheme.format)) + ")");
    return *t;
  }

  std::shared_ptr<const std::vector<TensorView>> slices() const { return slices_; }

 private:
  static constexpr size_t kMostSlices = 5;  // weight, weight_packed, weight_scale, bias, shape
  const Checkpoint& checkpoint_;
  std::string module_;
  int64_t stacked_, expert_;
  std::shared_ptr<std::vector<TensorView>> slices_;
  std::vector<const TensorView*> sources_;  // what each slice was cut from
};

void expect_shape(std::string_view module, const TensorView& t, std::vector<int64_t> shape) {
  if (t.shape != shape) {
    TensorView expected;
    expected.shape = shape;
    fail(module, describe(t) + ": expected shape " + expected.shape_string());
  }
}

// Zero points: refused, except the all-zero ones early exports wrote for symmetric schemes.
void check_zero_points(const Checkpoint& checkpoint, std::string_view module,
                       const std::string& prefix) {
  const TensorView* zp = checkpoint.find(prefix + "weight_zero_point");
  if (zp == nullptr) return;
  if (std::any_of(zp->data, zp->data + zp->bytes, [](uint8_t b) { return b != 0; }))
    fail(module, describe(*zp) +
                     ": non-zero weight zero points (asymmetric weights) are not "
                     "supported");
}

}  // namespace

namespace {

LinearTensors find_in(const Checkpoint& checkpoint, std::string_view module,
                      const LinearScheme& scheme, ModuleTensors& at) {
  const std::string prefix = std::string(module) + ".";
  LinearTensors t;
  t.module = module;
  t.scheme = scheme;
  t.bias = at.find("bias");
  const TensorView* weight = at.find("weight");
  const TensorView* packed = at.find("weight_packed");
  const TensorView* scale = at.find("weight_scale");

  if (scheme.kind == LinearKind::dense) {
    if (scale != nullptr || packed != nullptr)
      fail(module, "the config leaves it unquantized (" + scheme.reason +
                       ") but the checkpoint has " + describe(scale != nullptr ? *scale : *packed));
    t.weight = &at.require("weight", scheme);
    if (!is_float_dtype(t.weight->dtype) || t.weight->shape.size() != 2)
      fail(module, describe(*t.weight) + ": a dense weight must be F32, BF16 or F16 [N, K]");
    t.n = t.weight->shape[0];
    t.k = t.weight->shape[1];
  } else {
    if (const TensorView* g_idx = checkpoint.find(prefix + "weight_g_idx"))
      fail(module, describe(*g_idx) + ": g_idx (activation reordering) is not supported");
    check_zero_points(checkpoint, module, prefix);
    if (scheme.format == WeightFormat::int_quantized) {
      if (weight == nullptr && packed != nullptr)
        fail(module, "the config says int-quantized but the checkpoint has " + describe(*packed) +
                         " (pack-quantized)");
      t.weight = &at.require("weight", scheme);
      if (t.weight->dtype != Dtype::I8 || t.weight->shape.size() != 2)
        fail(module, describe(*t.weight) + ": int-quantized weights must be I8 [N, K]");
      t.n = t.weight->shape[0];
      t.k = t.weight->shape[1];
    } else {
      if (packed == nullptr && weight != nullptr)
        fail(module, "the config says pack-quantized but the checkpoint has " + describe(*weight) +
                         " (int-quantized or dense)");
      t.weight_packed = &at.require("weight_packed", scheme);
      const TensorView& shape = at.require("weight_shape", scheme);
      // compressed-tensors writes weight_shape as I64; its old metadata claims I32: take both.
      int64_t nk[2] = {0, 0};
      if (shape.dtype == Dtype::I64 && shape.numel() == 2) {
        const auto v = shape.as<int64_t>();
        nk[0] = v[0];
        nk[1] = v[1];
      } else if (shape.dtype == Dtype::I32 && shape.numel() == 2) {
        const auto v = shape.as<int32_t>();
        nk[0] = v[0];
        nk[1] = v[1];
      } else {
        fail(module, describe(shape) + ": expected I64 or I32 with 2 elements [N, K]");
      }
      if (nk[0] <= 0 || nk[1] <= 0)
        fail(module, describe(shape) + ": holds [" + std::to_string(nk[0]) + ", " +
                         std::to_string(nk[1]) + "]");
      t.n = nk[0];
      t.k = nk[1];
      if (t.weight_packed->dtype != Dtype::I32)
        fail(module, describe(*t.weight_packed) + ": pack-quantized weights must be I32");
      expect_shape(module, *t.weight_packed, {t.n, (t.k + 7) / 8});
    }
    t.weight_scale = &at.require("weight_scale", scheme);
    if (!is_float_dtype(t.weight_scale->dtype))
      fail(module, describe(*t.weight_scale) + ": scales must be F32, BF16 or F16");
    const int64_t groups =
        scheme.group_size == 0 ? 1 : (t.k + scheme.group_size - 1) / scheme.group_size;
    expect_shape(module, *t.weight_scale, {t.n, groups});
  }
  if (t.bias != nullptr) {
    if (!is_float_dtype(t.bias->dtype))
      fail(module, describe(*t.bias) + ": a bias must be F32, BF16 or F16");
    expect_shape(module, *t.bias, {t.n});
  }
  t.slices = at.slices();
  return t;
}

}  // namespace

LinearTensors find_linear_tensors(const Checkpoint& checkpoint, std::string_view module,
                                  const LinearScheme& scheme) {
  ModuleTensors at(checkpoint, module, 0, -1);
  return find_in(checkpoint, module, scheme, at);
}

LinearTensors find_linear_tensors(const Checkpoint& checkpoint, const LinearModule& module,
                                  const LinearScheme& scheme) {
  ModuleTensors at(checkpoint, module.name, module.stacked_experts, module.expert);
  return find_in(checkpoint, module.name, scheme, at);
}

int4::WeightSource LinearTensors::int4_source() const {
  if (scheme.kind == LinearKind::dense)
    throw Error("module '" + module + "' is dense: it has no int4 weights");
  int4::WeightSource s;
  s.n = n;
  s.k = k;
  s.group_size = scheme.group_size;
  if (weight != nullptr)
    s.values = weight->as<int8_t>().data();
  else
    s.packed = weight_packed->as<int32_t>().data();
  switch (weight_scale->dtype) {
    case Dtype::F32:
      s.scales = weight_scale->as<float>().data();
      s.scale_type = int4::ScaleType::f32;
      break;
    case Dtype::BF16:
      s.scales = weight_scale->as<uint16_t>(Dtype::BF16).data();
      s.scale_type = int4::ScaleType::bf16;
      break;
    default:
      s.scales = weight_scale->as<uint16_t>(Dtype::F16).data();
      s.scale_type = int4::ScaleType::f16;
      break;
  }
  return s;
}

size_t LinearTensors::bytes() const {
  size_t total = 0;
  for (const TensorView* t : {weight, weight_packed, weight_scale, bias})
    if (t != nullptr) total += t->bytes;
  return total;
}

void check_linear_shape(const LinearTensors& tensors, const LinearModule& module) {
  if (tensors.n != module.out_features || tensors.k != module.in_features)
    throw Error("module '" + module.name + "': the checkpoint holds " + std::to_string(tensors.n) +
                "x" + std::to_string(tensors.k) + " weights, config.json implies " +
                std::to_string(module.out_features) + "x" + std::to_string(module.in_features));
}

}  // namespace dq4
