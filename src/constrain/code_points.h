#pragma once
// Unicode code points as the converters see them: UTF-8 decoding that refuses malformed text, and
// sets of code points kept as sorted, disjoint ranges (what a GBNF character class writes).

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dq4::constrain {

constexpr char32_t kMaxCodePoint = 0x10FFFF;

// The code point at text[pos] (advancing pos past it), or -1 (pos unchanged) when the bytes there
// are not well-formed UTF-8 (overlong forms, surrogates and truncated sequences included).
long decode_utf8(std::string_view text, size_t& pos);
void write_utf8(std::string& out, char32_t c);
bool valid_utf8(std::string_view text);

class CodePointSet {
 public:
  CodePointSet() = default;
  static CodePointSet of(char32_t c) { return range(c, c); }
  static CodePointSet range(char32_t first, char32_t last);

  void add(char32_t first, char32_t last);
  void add(const CodePointSet& other);
  // Every scalar value (surrogates excluded: UTF-8 cannot carry them) not in this set.
  CodePointSet complement() const;
  CodePointSet minus(const CodePointSet& other) const;
  CodePointSet intersect(const CodePointSet& other) const;
  bool contains(char32_t c) const;
  bool empty() const { return ranges_.empty(); }
  bool single() const { return ranges_.size() == 1 && ranges_[0].first == ranges_[0].second; }
  const std::vector<std::pair<char32_t, char32_t>>& ranges() const { return ranges_; }

 private:
  std::vector<std::pair<char32_t, char32_t>> ranges_;  // sorted, disjoint, not adjacent
};

}  // namespace dq4::constrain
