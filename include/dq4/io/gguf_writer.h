#pragma once
// A GGUF v3 file writer (the model format of llama.cpp / ggml): metadata key-values, tensor
// infos, then the tensor data, each part aligned to 32 bytes (GGUF's default general.alignment).
// Tensors are declared with a function that fills their bytes when write() reaches them, so a
// model is converted one tensor at a time.

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace dq4 {

// ggml tensor types dq4 writes (ggml.h's enum ggml_type).
enum class GgmlType : uint32_t { F32 = 0, F16 = 1, Q4_0 = 2, BF16 = 30 };

// Q4_0: blocks of 32 weights along a row, each an f16 scale d and 16 bytes; weight j of the block
// is the low nibble of byte j, weight j + 16 its high nibble; value = (nibble - 8) * d.
inline constexpr int64_t kQ4_0BlockSize = 32;
inline constexpr size_t kQ4_0BlockBytes = 18;

// Bytes of a tensor of `type` with `elements` (a multiple of 32 for Q4_0).
size_t ggml_bytes(GgmlType type, int64_t elements);

class GgufWriter {
 public:
  // Fills the tensor's bytes (exactly its size) when write() reaches it.
  using Producer = std::function<void(uint8_t* out, size_t bytes)>;

  // Metadata, in the order they are added; keys must be unique (throws dq4::Error otherwise).
  void add_string(std::string_view key, std::string_view value);
  void add_u32(std::string_view key, uint32_t value);
  void add_f32(std::string_view key, float value);
  void add_bool(std::string_view key, bool value);
  void add_strings(std::string_view key, const std::vector<std::string>& values);
  void add_i32s(std::string_view key, const std::vector<int32_t>& values);
  void add_f32s(std::string_view key, const std::vector<float>& values);

  // `shape` is row-major, outermost first ([rows, cols], as safetensors and numpy write it);
  // GGUF stores it reversed (ne[0] = cols). Q4_0 needs the last dimension a multiple of 32.
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> shape, Producer fill);

  size_t tensor_count() const { return tensors_.size(); }

  // Writes the file to `path` (replacing it); throws dq4::Error naming the file on I/O errors.
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> shape;
    size_t bytes = 0;
    uint64_t offset = 0;  // in the data section
    Producer fill;
  };
  void add_key(std::string_view key, uint32_t value_type);

  std::string metadata_;  // the encoded key-value pairs
  uint64_t metadata_count_ = 0;
  std::vector<std::string> keys_;
  std::vector<Tensor> tensors_;
  uint64_t data_bytes_ = 0;
};

}  // namespace dq4
