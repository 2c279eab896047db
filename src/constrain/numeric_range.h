#pragma once
// JSON numbers between two bounds as GBNF expressions, for JSON Schema's minimum, maximum,
// exclusiveMinimum and exclusiveMaximum.

#include <cstdint>
#include <optional>
#include <string>

namespace dq4::constrain {

// The largest magnitude the JSON grammars write (16 digits, a double's precision).
constexpr int64_t kMaxJsonInteger = 9999999999999999;

// A GBNF expression matching exactly the JSON integers (no leading zeros, no "-0") in [lo, hi];
// a missing bound is +-kMaxJsonInteger, and bounds beyond it are clamped. Throws ConstraintError
// when no integer is in the range.
std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

// One end of a range of numbers.
struct NumberBound {
  int64_t value;
  bool exclusive;
};

// A GBNF expression matching JSON numbers without an exponent (at most 16 digits before and after
// the point) that lie within the bounds, which must be integers; a missing bound is none. Throws
// ConstraintError when no number is in the range.
std::string number_range_gbnf(std::optional<NumberBound> lo, std::optional<NumberBound> hi);

}  // namespace dq4::constrain
