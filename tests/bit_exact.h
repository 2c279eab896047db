#pragma once
// Bit-for-bit comparison of kernel outputs, shared by every kernel family's exactness tests.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace dq4::test {

// Index of the first element whose bits differ, or a.size() when none does.
inline size_t first_bit_difference(const std::vector<float>& a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], 4) != 0) return i;
  return a.size();
}

// Success when y [rows, ldy] has exactly the bits of `reference`; else says where they differ.
inline ::testing::AssertionResult same_bits(const std::vector<float>& reference,
                                            const std::vector<float>& y, int64_t ldy,
                                            const std::string& what) {
  if (y.size() != reference.size())
    return ::testing::AssertionFailure()
           << what << ": " << y.size() << " outputs, reference has " << reference.size();
  const size_t at = first_bit_difference(reference, y);
  if (at == reference.size()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << " differs at row " << at / static_cast<size_t>(ldy) << " column "
         << at % static_cast<size_t>(ldy) << ": " << y[at] << " vs reference " << reference[at];
}

// Success when the padding columns [n, ldy) of every row of y still hold `fill`.
inline ::testing::AssertionResult padding_untouched(const std::vector<float>& y, int64_t m,
                                                    int64_t n, int64_t ldy, float fill,
                                                    const std::string& what) {
  for (int64_t r = 0; r < m; ++r)
    for (int64_t col = n; col < ldy; ++col)
      if (y[r * ldy + col] != fill)
        return ::testing::AssertionFailure()
               << what << " wrote padding at row " << r << " column " << col;
  return ::testing::AssertionSuccess();
}

}  // namespace dq4::test
