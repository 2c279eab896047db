#pragma once
// Writing safetensors checkpoints as a stream: every tensor's name, dtype and shape is declared up
// front (the header comes first in the file), then the data is appended tensor by tensor, in
// pieces as large as the caller likes, so no model ever has to be held in memory.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dq4/io/tensor_view.h"

namespace dq4 {

struct TensorSpec {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<int64_t> shape;
  uint64_t bytes() const;  // numel x dtype size
};

// The order in which the safetensors library (torch's save_file, save_pretrained) lays tensors
// out: by its dtype enum, descending (U64, I64, F64, F32, U32, I32, BF16, F16, ..., I8, U8, BOOL),
// then by name. That is larger elements first: the data region has no gaps, so this is what keeps
// every tensor aligned to its element size (an int8 [3] tensor followed by an f32 one would leave
// the f32 data misaligned).
bool safetensors_order(const TensorSpec& a, const TensorSpec& b);

// One .safetensors file. The header holds "__metadata__": {"format": "pt"} and the tensors in
// the given order with back-to-back data offsets, padded with spaces so the data starts 8-byte
// aligned, as Hugging Face's writer does.
class SafetensorsWriter {
 public:
  // Creates `path` (truncating it) and writes the header. Throws dq4::Error naming the path, or
  // naming a tensor whose data would not be aligned to its element size in this order.
  SafetensorsWriter(std::string path, std::vector<TensorSpec> tensors);
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // The next `bytes` of the data region (of the current tensor or several).
  void append(const void* data, size_t bytes);
  // Checks that all data was appended, flushes it to disk (fsync) and closes the file.
  void finish();

  const std::string& path() const { return path_; }
  uint64_t file_bytes() const { return header_bytes_ + data_bytes_; }  // when finished

 private:
  void flush_buffer();
  void write_fully(const void* data, size_t bytes);

  std::string path_;
  int fd_ = -1;
  uint64_t header_bytes_ = 0;
  uint64_t data_bytes_ = 0;  // the data region's declared size
  uint64_t appended_ = 0;
  std::vector<uint8_t> buffer_;  // gathers small appends into large writes
};

// The header JSON (without the length prefix and padding) of a file holding `tensors` in order.
std::string safetensors_header_json(const std::vector<TensorSpec>& tensors);

}  // namespace dq4
