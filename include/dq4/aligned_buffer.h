#pragma once
// An owned, 64-byte aligned, zero-initialised byte buffer (cache-line aligned for SIMD loads);
// uninitialized() leaves the zeroing to the caller (e.g. to threads that each fill their part).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace dq4 {

class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 64;

  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) : AlignedBuffer(uninitialized(bytes)) {
    if (data_ != nullptr) std::memset(data_, 0, rounded(size_));
  }
  static AlignedBuffer uninitialized(size_t bytes) {
    AlignedBuffer out;
    if (bytes == 0) return out;
    out.data_ = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, rounded(bytes)));
    if (out.data_ == nullptr) throw std::bad_alloc();
    out.size_ = bytes;
    return out;
  }
  AlignedBuffer(const AlignedBuffer& other) : AlignedBuffer(other.size_) {
    if (size_ != 0) std::memcpy(data_, other.data_, size_);
  }
  AlignedBuffer(AlignedBuffer&& other) noexcept : data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  AlignedBuffer& operator=(AlignedBuffer other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  ~AlignedBuffer() { std::free(data_); }

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  static size_t rounded(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace dq4
