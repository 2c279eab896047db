// Sharded checkpoint writing, with the file names and index transformers' save_pretrained uses.

#include "dq4/io/checkpoint_writer.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "dq4/kernels/error.h"

namespace dq4 {

std::vector<std::vector<TensorSpec>> plan_shards(const std::vector<TensorSpec>& tensors,
                                                 uint64_t max_shard_bytes) {
  if (max_shard_bytes == 0) throw Error("checkpoint writer: the maximum shard size is 0 bytes");
  std::vector<std::vector<TensorSpec>> shards(1);
  uint64_t shard_bytes = 0;
  for (const TensorSpec& t : tensors) {
    if (!shards.back().empty() && shard_bytes + t.bytes() > max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(t);
    shard_bytes += t.bytes();
  }
  return shards;
}

CheckpointWriter::CheckpointWriter(std::string dir, const std::vector<TensorSpec>& tensors,
                                   uint64_t max_shard_bytes)
    : dir_(std::move(dir)), shards_(plan_shards(tensors, max_shard_bytes)) {
  std::set<std::string> names;
  for (size_t s = 0; s < shards_.size(); ++s)
    for (const TensorSpec& t : shards_[s]) {
      if (!names.insert(t.name).second)
        throw Error("checkpoint writer: tensor \"" + t.name + "\" is declared twice");
      order_.push_back(&t);
      shard_of_.push_back(s);
      total_bytes_ += t.bytes();
    }
  file_ = std::make_unique<SafetensorsWriter>(dir_ + "/" + shard_file_name(0), shards_[0]);
  advance();
}

CheckpointWriter::~CheckpointWriter() = default;

std::string CheckpointWriter::shard_file_name(size_t shard) const {
  if (shards_.size() == 1) return "model.safetensors";
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", shard + 1, shards_.size());
  return name;
}

const TensorSpec* CheckpointWriter::current_tensor() const {
  return current_ < order_.size() ? order_[current_] : nullptr;
}

void CheckpointWriter::advance() {
  while (current_ < order_.size() && written_in_current_ == order_[current_]->bytes()) {
    ++current_;
    written_in_current_ = 0;
    const size_t next_shard = current_ < order_.size() ? shard_of_[current_] : shards_.size();
    if (next_shard != open_shard_) {
      file_->finish();
      file_bytes_ += file_->file_bytes();
      file_.reset();
      open_shard_ = next_shard;
      if (next_shard < shards_.size())
        file_ = std::make_unique<SafetensorsWriter>(dir_ + "/" + shard_file_name(next_shard),
                                                    shards_[next_shard]);
    }
  }
}

void CheckpointWriter::append(const void* data, size_t bytes) {
  const TensorSpec* t = current_tensor();
  if (t == nullptr) throw Error("checkpoint writer " + dir_ + ": append after the last tensor");
  if (written_in_current_ + bytes > t->bytes())
    throw Error("checkpoint writer " + dir_ + ": tensor \"" + t->name + "\" has " +
                std::to_string(t->bytes()) + " bytes; " +
                std::to_string(written_in_current_ + bytes) + " were appended");
  file_->append(data, bytes);
  written_in_current_ += bytes;
  written_total_ += bytes;
  advance();
}

void CheckpointWriter::finish() {
  if (const TensorSpec* t = current_tensor())
    throw Error("checkpoint writer " + dir_ + ": tensor \"" + t->name + "\" and " +
                std::to_string(order_.size() - current_ - 1) + " more were not written");
  if (file_) {  // a checkpoint without tensors still gets its (empty) file
    file_->finish();
    file_bytes_ += file_->file_bytes();
    file_.reset();
  }
  if (shards_.size() == 1) return;
  nlohmann::json index;
  index["metadata"]["total_size"] = total_bytes_;
  index["weight_map"] = nlohmann::json::object();
  for (size_t i = 0; i < order_.size(); ++i)
    index["weight_map"][order_[i]->name] = shard_file_name(shard_of_[i]);
  const std::string path = dir_ + "/model.safetensors.index.json";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << index.dump(2) << "\n";
  out.close();
  if (!out) throw Error("checkpoint writer: cannot write " + path);
}

}  // namespace dq4
