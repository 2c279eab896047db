#pragma once
// An owned, 64-byte aligned, zero-initialised byte buffer (cache-line aligned for SIMD loads).
// Buffers of 2 MiB or more (packed weights, the KV cache) are anonymous mappings aligned to 2 MiB
// whose whole 2 MiB pieces are advised to use transparent huge pages. Their pages arrive zeroed
// from the kernel when first touched, so the threads that pack a matrix fault in their own parts
// and nobody memsets it, and huge pages take far fewer page faults (slow in a VM) and give the
// decode stream a TLB miss per 2 MiB instead of per 4 KiB.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace dq4 {

class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 64;
  static constexpr size_t kHugePage = size_t{2} << 20;

  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    if (mapped(bytes)) {
      data_ = map_zeroed(bytes);
      return;
    }
    data_ = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, rounded(bytes, kAlignment)));
    if (data_ == nullptr) throw std::bad_alloc();
    std::memset(data_, 0, rounded(bytes, kAlignment));
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
  ~AlignedBuffer() {
    if (data_ != nullptr && mapped(size_))
      unmap(data_, size_);
    else
      std::free(data_);
  }

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  static size_t rounded(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

#if defined(__linux__)
  static bool mapped(size_t bytes) { return bytes >= kHugePage; }

  static size_t page_size() {
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return page;
  }

  // Maps one huge page more than needed and unmaps the unaligned head and everything past the
  // buffer's last page. Only the whole huge pages are advised to be huge: a last huge page made
  // whole would take 2 MiB of memory for what may be a few bytes of the buffer (an expert of a
  // mixture packed into 2.3 MiB would take 4), so the tail keeps 4 KiB pages.
  static uint8_t* map_zeroed(size_t bytes) {
    const size_t length = rounded(bytes, page_size());
    void* raw = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto begin = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = rounded(begin, kHugePage);
    if (aligned > begin) munmap(raw, aligned - begin);
    const uintptr_t end = begin + length + kHugePage;
    if (end > aligned + length)
      munmap(reinterpret_cast<void*>(aligned + length), end - aligned - length);
    // Advice only: without transparent huge pages the mapping keeps 4 KiB pages.
    const size_t huge = length / kHugePage * kHugePage;
#if defined(MADV_HUGEPAGE)
    madvise(reinterpret_cast<void*>(aligned), huge, MADV_HUGEPAGE);
#endif
#if defined(MADV_NOHUGEPAGE)
    if (length > huge)
      madvise(reinterpret_cast<void*>(aligned + huge), length - huge, MADV_NOHUGEPAGE);
#endif
    return reinterpret_cast<uint8_t*>(aligned);
  }
  static void unmap(uint8_t* data, size_t bytes) { munmap(data, rounded(bytes, page_size())); }
#else
  static bool mapped(size_t) { return false; }
  static uint8_t* map_zeroed(size_t) { return nullptr; }
  static void unmap(uint8_t*, size_t) {}
#endif

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace dq4
