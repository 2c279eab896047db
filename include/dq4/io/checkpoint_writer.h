#pragma once
// A Hugging Face checkpoint directory written as a stream: model.safetensors, or shards
// model-0000i-of-0000n.safetensors plus model.safetensors.index.json when the tensors exceed one
// shard. Tensors are declared up front in write order and appended in that order.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dq4/io/safetensors_writer.h"

namespace dq4 {

// Hugging Face's default max_shard_size, "5GB".
inline constexpr uint64_t kDefaultMaxShardBytes = 5'000'000'000;

// Splits `tensors` (in order) into shards as transformers does: a shard is closed when the next
// tensor would take it past `max_shard_bytes`; a larger tensor gets a shard of its own.
std::vector<std::vector<TensorSpec>> plan_shards(const std::vector<TensorSpec>& tensors,
                                                 uint64_t max_shard_bytes);

class CheckpointWriter {
 public:
  // `dir` must exist. Throws dq4::Error for an invalid plan (a repeated name, max_shard_bytes 0).
  CheckpointWriter(std::string dir, const std::vector<TensorSpec>& tensors,
                   uint64_t max_shard_bytes = kDefaultMaxShardBytes);
  ~CheckpointWriter();

  // The next bytes of the current tensor; a piece never runs past the end of that tensor.
  void append(const void* data, size_t bytes);
  // All tensors written: closes the last shard and writes the index when there are several.
  void finish();

  size_t shard_count() const { return shards_.size(); }
  size_t tensors_done() const { return current_; }
  const TensorSpec* current_tensor() const;  // nullptr when all are done
  uint64_t data_bytes_written() const { return written_total_; }
  uint64_t total_data_bytes() const { return total_bytes_; }
  uint64_t file_bytes_written() const { return file_bytes_; }  // finished files, headers included

 private:
  std::string shard_file_name(size_t shard) const;
  void advance();  // past finished (and empty) tensors, opening the next shard when needed

  std::string dir_;
  std::vector<std::vector<TensorSpec>> shards_;
  std::vector<const TensorSpec*> order_;  // every tensor in write order
  std::vector<size_t> shard_of_;          // order_ index -> shard
  size_t current_ = 0;                    // index into order_
  uint64_t written_in_current_ = 0;
  uint64_t written_total_ = 0, total_bytes_ = 0, file_bytes_ = 0;
  size_t open_shard_ = 0;
  std::unique_ptr<SafetensorsWriter> file_;
};

}  // namespace dq4
