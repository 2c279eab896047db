#pragma once
// A Hugging Face checkpoint directory: model.safetensors, or shards listed by
// model.safetensors.index.json ("weight_map": tensor name -> shard file). Every shard is opened
// and validated up front, and every tensor of the index must be in the shard it names.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dq4/io/safetensors.h"
#include "dq4/io/tensor_view.h"

namespace dq4 {

class Checkpoint {
 public:
  // Throws dq4::Error naming the directory, index, shard or tensor at fault.
  static Checkpoint open_dir(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const TensorView* find(std::string_view name) const;    // nullptr when absent
  const TensorView& tensor(std::string_view name) const;  // throws naming the tensor and dir
  std::vector<std::string> names() const;                 // sorted
  bool has_prefix(std::string_view prefix) const;         // a tensor's name starts with it
  const std::vector<SafetensorsFile>& files() const { return files_; }

  // Drops the mapped pages that lie wholly inside the tensor `name` (absent: nothing) from memory
  // once a model has packed it; a later read maps them in again from the file.
  void release_pages(std::string_view name) const;

 private:
  std::string dir_;
  std::vector<SafetensorsFile> files_;
  // name -> (index into files_, index into that file's tensors()); indices keep copies valid.
  std::map<std::string, std::pair<size_t, size_t>, std::less<>> tensors_;
};

}  // namespace dq4
