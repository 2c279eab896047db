#pragma once
// The first activation row holding a NaN or an infinity that any of the tasks checking rows
// found: the matmul drivers and Linear check rows in parallel and report the lowest.

#include <atomic>
#include <climits>
#include <cstdint>

namespace dq4 {

class FirstBadRow {
 public:
  // Notes a task's finding: a row, or -1 for none.
  void add(int64_t row) {
    if (row < 0) return;
    int64_t seen = row_.load(std::memory_order_relaxed);
    while (row < seen && !row_.compare_exchange_weak(seen, row, std::memory_order_relaxed)) {
    }
  }
  // The lowest row noted, or -1.
  int64_t get() const {
    const int64_t row = row_.load(std::memory_order_relaxed);
    return row == INT64_MAX ? -1 : row;
  }

 private:
  std::atomic<int64_t> row_{INT64_MAX};
};

}  // namespace dq4
