#pragma once
// Enough copies of an operand (packed weights, an f32 matrix) that cycling through them reads
// each from DRAM: together they fill a byte budget chosen to exceed the last-level cache.

#include <cstddef>
#include <vector>

namespace dq4::cli::bench {

// Copies of `bytes_each` bytes needed to fill `budget` (at least one).
inline size_t copies_for_budget(size_t bytes_each, size_t budget) {
  if (bytes_each == 0) return 1;
  const size_t copies = (budget + bytes_each - 1) / bytes_each;
  return copies == 0 ? 1 : copies;
}

template <class T>
class ColdCopies {
 public:
  ColdCopies(const T& original, size_t bytes_each, size_t budget)
      : copies_(copies_for_budget(bytes_each, budget), original), bytes_each_(bytes_each) {}

  // The next copy in turn; the least recently used one, since the copies are cycled in order.
  const T& next() {
    const T& copy = copies_[next_];
    next_ = next_ + 1 == copies_.size() ? 0 : next_ + 1;
    return copy;
  }
  const T& operator[](size_t i) const { return copies_[i]; }
  size_t count() const { return copies_.size(); }
  size_t total_bytes() const { return copies_.size() * bytes_each_; }

 private:
  std::vector<T> copies_;
  size_t bytes_each_;
  size_t next_ = 0;
};

}  // namespace dq4::cli::bench
