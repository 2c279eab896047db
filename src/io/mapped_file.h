#pragma once
// A whole file mapped read-only (private, never written), unmapped when the last owner goes.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace dq4::io {

class MappedFile {
 public:
  // Throws dq4::Error naming the path when it cannot be opened, is not a regular file or mapped.
  static std::shared_ptr<const MappedFile> open(const std::string& path);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  MappedFile(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  const uint8_t* data_;
  size_t size_;
};

}  // namespace dq4::io
