#pragma once
// A read-only, zero-copy view of one tensor in a checkpoint file: what the loaders hand to the
// model code. The bytes belong to whoever produced the view (a mapped file) and stay valid while
// that owner lives.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dq4 {

// The element types of the safetensors format that have a whole number of bytes.
enum class Dtype {
  BOOL,
  U8,
  I8,
  F8_E4M3,
  F8_E5M2,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  I64,
  U64,
  F64
};

std::string_view dtype_name(Dtype dtype);                     // "F32", as safetensors spells it
std::optional<Dtype> dtype_from_name(std::string_view name);  // nullopt when unknown
size_t dtype_size(Dtype dtype);                               // bytes per element

// The dtype a C++ element type reads without conversion (16-bit floats are read as uint16_t bits,
// so name their dtype explicitly: view.as<uint16_t>(Dtype::BF16)).
template <typename T>
struct DtypeOf {
  static_assert(sizeof(T) == 0, "no dtype reads as this type; pass the dtype explicitly");
};
template <>
struct DtypeOf<uint8_t> {
  static constexpr Dtype value = Dtype::U8;
};
template <>
struct DtypeOf<int8_t> {
  static constexpr Dtype value = Dtype::I8;
};
template <>
struct DtypeOf<int16_t> {
  static constexpr Dtype value = Dtype::I16;
};
template <>
struct DtypeOf<uint16_t> {
  static constexpr Dtype value = Dtype::U16;
};
template <>
struct DtypeOf<int32_t> {
  static constexpr Dtype value = Dtype::I32;
};
template <>
struct DtypeOf<uint32_t> {
  static constexpr Dtype value = Dtype::U32;
};
template <>
struct DtypeOf<int64_t> {
  static constexpr Dtype value = Dtype::I64;
};
template <>
struct DtypeOf<uint64_t> {
  static constexpr Dtype value = Dtype::U64;
};
template <>
struct DtypeOf<float> {
  static constexpr Dtype value = Dtype::F32;
};
template <>
struct DtypeOf<double> {
  static constexpr Dtype value = Dtype::F64;
};

struct TensorView {
  std::string name;
  Dtype dtype = Dtype::U8;
  std::vector<int64_t> shape;  // [] is a scalar
  const uint8_t* data = nullptr;
  size_t bytes = 0;
  std::string file;  // where the bytes live, for messages

  int64_t numel() const;
  std::string shape_string() const;  // "[64, 22]"

  // The elements as T. Throws dq4::Error naming the tensor and file when the dtype is not
  // `expected`, T's size does not match it, or the data is not aligned for T.
  template <typename T>
  std::span<const T> as(Dtype expected = DtypeOf<T>::value) const {
    const void* p = checked_data(expected, sizeof(T), alignof(T));
    return {static_cast<const T*>(p), bytes / sizeof(T)};
  }

 private:
  const void* checked_data(Dtype expected, size_t element_size, size_t alignment) const;
};

}  // namespace dq4
