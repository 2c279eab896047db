#include "numeric_range.h"

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
  const std::string rest_any = n == 2 ? " [0-9]" : " [0-9]{" + std::to_string(n - 1) + "}";
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

// The numerals of [lo, hi] as one expression, or "" when lo > hi.
std::string numerals(int64_t lo, int64_t hi) {
  if (lo > hi) return "";
  return "( " + join(non_negative(lo, hi)) + " )";
}

const char* kFraction = "( \".\" [0-9]{1,16} )?";
const char* kPositiveFraction = "\".\" [0-9]{0,15} [1-9]";

// Magnitudes m (a numeral and an optional fraction) with a <= m (a < m when exclusive) and
// m <= b (m < b): none, or b missing for no upper bound. 0 <= a <= b.
void magnitudes(NumberBound a, std::optional<NumberBound> b, const std::string& sign,
                std::vector<std::string>& out) {
  const int64_t top = b ? b->value : kMaxJsonInteger + 1;
  auto add = [&](const std::string& m) { out.push_back(sign + m); };
  if (b && a.value == b->value) {  // the one number a = b, if both ends take it
    if (!a.exclusive && !b->exclusive) add("\"" + std::to_string(a.value) + "\"");
    return;
  }
  // The numeral a: a itself and a plus a fraction (all below a + 1 <= b).
  add("\"" + std::to_string(a.value) + "\" " + (a.exclusive ? kPositiveFraction : kFraction));
  // Numerals strictly between: any fraction.
  const std::string between = numerals(a.value + 1, std::min(top - 1, kMaxJsonInteger));
  if (!between.empty()) add(between + " " + kFraction);
  // The numeral b: only b itself.
  if (b && !b->exclusive) add("\"" + std::to_string(b->value) + "\"");
}

}  // namespace

std::string number_range_gbnf(std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
  auto clamp = [](std::optional<NumberBound> bound) -> std::optional<NumberBound> {
    if (bound && bound->value > kMaxJsonInteger) return NumberBound{kMaxJsonInteger, false};
    if (bound && bound->value < -kMaxJsonInteger) return NumberBound{-kMaxJsonInteger, false};
    return bound;
  };
  lo = clamp(lo);
  hi = clamp(hi);
  if (lo && hi &&
      (lo->value > hi->value || (lo->value == hi->value && (lo->exclusive || hi->exclusive)))) {
    throw ConstraintError("no number lies between the minimum and the maximum");
  }
  std::vector<std::string> options;
  // v >= 0 as its magnitude; v < 0 as "-" and a magnitude within the mirrored bounds.
  if (!hi || hi->value >= 0) {
    const NumberBound from = lo && lo->value >= 0 ? *lo : NumberBound{0, false};
    magnitudes(from, hi, "", options);
  }
  if (!lo || lo->value < 0) {
    NumberBound from{0, true};  // -0 is 0, written on the other side
    if (hi && hi->value < 0) from = {-hi->value, hi->exclusive};
    std::optional<NumberBound> to;
    if (lo) to = NumberBound{-lo->value, lo->exclusive};
    magnitudes(from, to, "\"-\" ", options);
  }
  return "( " + join(options) + " )";
}

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
