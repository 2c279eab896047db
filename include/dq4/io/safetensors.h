#pragma once
// One safetensors file, memory-mapped read-only, its header fully validated on open: every
// tensor's dtype, shape and byte range, with the ranges tiling the data region exactly (no
// overlap, no gap). Tensors are zero-copy views into the mapping.
// Format: 8-byte little-endian header length N, N bytes of UTF-8 JSON, then the data region.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dq4/io/tensor_view.h"

namespace dq4 {

class SafetensorsFile {
 public:
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the limit of the reference reader

  // Maps `path` and parses it. Throws dq4::Error naming the path (and tensor and field).
  static SafetensorsFile open(const std::string& path);

  // Parses a whole file held in memory. The bytes stay owned by the caller and must outlive the
  // result; `path` names them in messages and in each TensorView::file.
  static SafetensorsFile parse(std::span<const uint8_t> bytes, const std::string& path);

  const std::string& path() const { return path_; }
  const TensorView* find(std::string_view name) const;    // nullptr when absent
  const TensorView& tensor(std::string_view name) const;  // throws naming the tensor and file
  const std::vector<TensorView>& tensors() const { return tensors_; }  // in data order
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::string path_;
  std::shared_ptr<const void> storage_;  // keeps the mapping alive (empty for parse())
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t, std::less<>> by_name_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace dq4
