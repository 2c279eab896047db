#pragma once
// Test-only GGUF v3 reader, written from the format specification independently of
// dq4::GgufWriter: metadata values, tensor infos, and the tensors dequantized to f32.

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace dq4::test {

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> ne;  // GGUF order: ne[0] is the innermost (row length)
  uint32_t type = 0;        // ggml_type
  uint64_t offset = 0;      // in the data section
};

using GgufValue = std::variant<uint32_t, int32_t, float, bool, std::string,
                               std::vector<std::string>, std::vector<int32_t>, std::vector<float>>;

struct GgufFile {
  uint32_t version = 0;
  std::map<std::string, GgufValue> metadata;
  std::vector<GgufTensorInfo> tensors;  // in file order
  uint64_t data_start = 0;              // absolute offset of the data section
  std::string bytes;                    // the whole file

  // Reads `path`; ADD_FAILUREs / throws std::runtime_error on malformed content.
  static GgufFile read(const std::string& path);

  const GgufTensorInfo* find(const std::string& name) const;
  template <typename T>
  const T& get(const std::string& key) const {
    return std::get<T>(metadata.at(key));
  }
  // The tensor as f32, row-major (F32, F16, BF16 or Q4_0).
  std::vector<float> values(const std::string& name) const;
};

}  // namespace dq4::test
