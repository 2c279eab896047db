// The safetensors dtype table and the checks behind TensorView::as<T>().

#include "dq4/io/tensor_view.h"

#include <array>
#include <cstdint>
#include <string>

#include "dq4/kernels/error.h"

namespace dq4 {
namespace {

struct DtypeInfo {
  Dtype dtype;
  std::string_view name;
  size_t size;
};

constexpr std::array<DtypeInfo, 15> kDtypes{{
    {Dtype::BOOL, "BOOL", 1},
    {Dtype::U8, "U8", 1},
    {Dtype::I8, "I8", 1},
    {Dtype::F8_E4M3, "F8_E4M3", 1},
    {Dtype::F8_E5M2, "F8_E5M2", 1},
    {Dtype::I16, "I16", 2},
    {Dtype::U16, "U16", 2},
    {Dtype::F16, "F16", 2},
    {Dtype::BF16, "BF16", 2},
    {Dtype::I32, "I32", 4},
    {Dtype::U32, "U32", 4},
    {Dtype::F32, "F32", 4},
    {Dtype::I64, "I64", 8},
    {Dtype::U64, "U64", 8},
    {Dtype::F64, "F64", 8},
}};

const DtypeInfo& info(Dtype dtype) {
  for (const auto& d : kDtypes)
    if (d.dtype == dtype) return d;
  throw Error("dtype: invalid Dtype value " + std::to_string(static_cast<int>(dtype)));
}

}  // namespace

std::string_view dtype_name(Dtype dtype) { return info(dtype).name; }
size_t dtype_size(Dtype dtype) { return info(dtype).size; }

std::optional<Dtype> dtype_from_name(std::string_view name) {
  for (const auto& d : kDtypes)
    if (d.name == name) return d.dtype;
  return std::nullopt;
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorView::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const void* TensorView::checked_data(Dtype expected, size_t element_size, size_t alignment) const {
  const std::string where = "tensor \"" + name + "\" in " + file;
  if (dtype != expected)
    throw Error(where + " is " + std::string(dtype_name(dtype)) + ", not " +
                std::string(dtype_name(expected)));
  if (element_size != dtype_size(expected))
    throw Error(where + ": a " + std::to_string(element_size) + "-byte type cannot hold " +
                std::string(dtype_name(expected)));
  if (bytes == 0) return nullptr;  // an empty span, wherever its (meaningless) offset lies
  // Unaligned typed access is undefined; safetensors writers align the data region to 8 bytes.
  if (reinterpret_cast<uintptr_t>(data) % alignment != 0)
    throw Error(where + ": data is not aligned to " + std::to_string(alignment) + " bytes");
  return data;
}

}  // namespace dq4
