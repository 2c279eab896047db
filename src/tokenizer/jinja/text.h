#pragma once
// UTF-8 text as Python sees it: strings are sequences of code points, and "whitespace" is what
// str.isspace() accepts. Chat templates index, slice, strip and measure strings the Python way.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dq4::jinja {

// Code points of valid UTF-8 (callers validate input once, at the boundary).
std::vector<char32_t> decode_utf8(std::string_view text);
void append_utf8(std::string& out, char32_t code_point);
std::string encode_utf8(const std::vector<char32_t>& code_points);
bool is_valid_utf8(std::string_view text);
// Number of code points.
int64_t utf8_length(std::string_view text);

// Python's str.isspace() for one code point.
bool is_python_space(char32_t c);

// str.strip / lstrip / rstrip: `chars` empty-and-absent means whitespace.
enum class StripSide { kBoth, kLeft, kRight };
std::string strip(std::string_view text, StripSide side, const std::string* chars);

// ASCII-only case mapping (Python maps all of Unicode; templates apply it to roles and keywords).
std::string to_upper(std::string_view text);
std::string to_lower(std::string_view text);
// Python's str.splitlines(): \n, \r\n, \r, \v, \f, \x1c-\x1e, \x85, U+2028, U+2029 end lines.
std::vector<std::string> split_lines(const std::string& s);
// str.title() and str.capitalize(), ASCII letters only.
std::string python_title(const std::string& s);
std::string capitalize(const std::string& s);

}  // namespace dq4::jinja
