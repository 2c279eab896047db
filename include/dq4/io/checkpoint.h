#pragma once
// A Hugging Face checkpoint directory: model.safetensors, or shards listed by
// model.safetensors.index.json ("weight_map": tensor name -> shard file). Every shard is opened
// and validated up front, and every tensor of the index must be in the shard it names.

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
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
  // The tensors find() and tensor() never returned, sorted: what a model loaded from the
  // checkpoint left unread (copies of a Checkpoint share this record).
  std::vector<std::string> unread() const;
  const std::vector<SafetensorsFile>& files() const { return files_; }

  // Drops the mapped pages that lie wholly inside the tensor `name` (absent: nothing) from memory
  // once a model has packed it; a later read maps them in again from the file.
  void release_pages(std::string_view name) const;

 private:
  struct Location {
    size_t file;   // index into files_
    size_t index;  // into that file's tensors(); indices keep copies valid
    size_t order;  // into read_
  };
  const TensorView* lookup(std::string_view name, bool mark_read) const;
  void add(const std::string& name, size_t file, size_t index);

  std::string dir_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, Location, std::less<>> tensors_;
  // Whether find() or tensor() returned each tensor; atomic: loading may look up from threads.
  std::shared_ptr<std::vector<std::atomic<bool>>> read_ =
      std::make_shared<std::vector<std::atomic<bool>>>();
};

}  // namespace dq4
