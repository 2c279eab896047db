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
#include <type_traits>
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
constexpr Dtype dtype_of() {
  if constexpr (std::is_same_v<T, uint8_t>)
    return Dtype::U8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return Dtype::I8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return Dtype::I16;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return Dtype::U16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return Dtype::I32;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return Dtype::U32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return Dtype::I64;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return Dtype::U64;
  else if constexpr (std::is_same_v<T, float>)
    return Dtype::F32;
  else if constexpr (std::is_same_v<T, double>)
    return Dtype::F64;
  else
    static_assert(sizeof(T) == 0, "no dtype reads as this type; pass the dtype explicitly");
}

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
  std::span<const T> as(Dtype expected = dtype_of<T>()) const {
    const void* p = checked_data(expected, sizeof(T), alignof(T));
    return {static_cast<const T*>(p), bytes / sizeof(T)};
  }

 private:
  const void* checked_data(Dtype expected, size_t element_size, size_t alignment) const;
};

}  // namespace dq4
