#pragma once
// Decimal integers between two bounds as a GBNF expression, for JSON Schema's minimum/maximum.

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

}  // namespace dq4::constrain
