#include "integer_range.h"

#include <algorithm>
#include <vector>

#include "dq4/constrain/constraint.h"

namespace dq4::constrain {
namespace {

std::string digit_class(char a, char b) {
  if (a == b) return std::string("\"") + a + "\"";
  return std::string("[") + a + "-" + b + "]";
}

// Sequences of digits matching the numerals from lo to hi, both of the same length.
void same_length(const std::string& lo, const std::string& hi, const std::string& before,
                 std::vector<std::string>& out) {
  const size_t n = lo.size();
  if (n == 1) {
    out.push_back(before + digit_class(lo[0], hi[0]));
    return;
  }
  const std::string rest_any = " [0-9]{" + std::to_string(n - 1) + "}";
  if (lo[0] == hi[0]) {
    same_length(lo.substr(1), hi.substr(1), before + digit_class(lo[0], lo[0]) + " ", out);
    return;
  }
  const bool lo_rest_zero = lo.find_first_not_of('0', 1) == std::string::npos;
  const bool hi_rest_nine = hi.find_first_not_of('9', 1) == std::string::npos;
  if (!lo_rest_zero) {
    same_length(lo.substr(1), std::string(n - 1, '9'), before + digit_class(lo[0], lo[0]) + " ",
                out);
  }
  const char first = lo_rest_zero ? lo[0] : static_cast<char>(lo[0] + 1);
  const char last = hi_rest_nine ? hi[0] : static_cast<char>(hi[0] - 1);
  if (first <= last) out.push_back(before + digit_class(first, last) + rest_any);
  if (!hi_rest_nine) {
    same_length(std::string(n - 1, '0'), hi.substr(1), before + digit_class(hi[0], hi[0]) + " ",
                out);
  }
}

// The numerals of [lo, hi], 0 <= lo <= hi.
std::vector<std::string> non_negative(int64_t lo, int64_t hi) {
  std::vector<std::string> out;
  int64_t low_of_length = 0;
  int64_t high_of_length = 9;
  while (low_of_length <= hi) {
    const int64_t a = std::max(lo, low_of_length);
    const int64_t b = std::min(hi, high_of_length);
    if (a <= b) same_length(std::to_string(a), std::to_string(b), "", out);
    if (high_of_length >= kMaxJsonInteger) break;
    low_of_length = high_of_length + 1;
    high_of_length = high_of_length * 10 + 9;
  }
  return out;
}

std::string join(const std::vector<std::string>& options) {
  std::string out;
  for (const auto& o : options) {
    if (!out.empty()) out += " | ";
    out += o;
  }
  return out;
}

}  // namespace

std::string integer_range_gbnf(std::optional<int64_t> lo_bound, std::optional<int64_t> hi_bound) {
  const int64_t lo = std::max(lo_bound.value_or(-kMaxJsonInteger), -kMaxJsonInteger);
  const int64_t hi = std::min(hi_bound.value_or(kMaxJsonInteger), kMaxJsonInteger);
  if (lo > hi) throw ConstraintError("no integer lies between the minimum and the maximum");
  std::vector<std::string> options;
  if (lo < 0) {
    const std::string negatives = join(non_negative(std::max<int64_t>(1, -hi), -lo));
    if (!negatives.empty()) options.push_back("\"-\" ( " + negatives + " )");
  }
  if (hi >= 0) {
    for (auto& o : non_negative(std::max<int64_t>(lo, 0), hi)) options.push_back(std::move(o));
  }
  return "( " + join(options) + " )";
}

}  // namespace dq4::constrain
