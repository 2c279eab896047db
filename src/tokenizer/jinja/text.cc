#include "text.h"

#include <algorithm>
#include <cctype>

namespace dq4::jinja {
namespace {

// Length of the UTF-8 sequence starting at `lead`, 0 if `lead` cannot start one.
int sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

}  // namespace

std::vector<char32_t> decode_utf8(std::string_view text) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const int n = std::max(1, sequence_length(lead));
    char32_t c = n == 1 ? lead : lead & (0x7f >> n);
    for (int k = 1; k < n && i + k < text.size(); ++k)
      c = (c << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3f);
    out.push_back(c);
    i += n;
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
  }
}

std::string encode_utf8(const std::vector<char32_t>& code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (const char32_t c : code_points) append_utf8(out, c);
  return out;
}

bool is_valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const int n = sequence_length(lead);
    if (n == 0 || i + n > text.size()) return false;
    for (int k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) return false;
    if (n >= 3) {
      const auto second = static_cast<unsigned char>(text[i + 1]);
      if (lead == 0xe0 && second < 0xa0) return false;   // overlong
      if (lead == 0xed && second >= 0xa0) return false;  // surrogate
      if (lead == 0xf0 && second < 0x90) return false;   // overlong
      if (lead == 0xf4 && second >= 0x90) return false;  // above U+10FFFF
    }
    i += n;
  }
  return true;
}

int64_t utf8_length(std::string_view text) {
  int64_t n = 0;
  for (const char c : text) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
         c == 0x205f || c == 0x3000;
}

std::string strip(std::string_view text, StripSide side, const std::string* chars) {
  const std::vector<char32_t> code_points = decode_utf8(text);
  std::vector<char32_t> set;
  if (chars != nullptr) set = decode_utf8(*chars);
  auto strippable = [&](char32_t c) {
    return chars == nullptr ? is_python_space(c)
                            : std::find(set.begin(), set.end(), c) != set.end();
  };
  size_t begin = 0, end = code_points.size();
  if (side != StripSide::kRight)
    while (begin < end && strippable(code_points[begin])) ++begin;
  if (side != StripSide::kLeft)
    while (end > begin && strippable(code_points[end - 1])) --end;
  return encode_utf8(std::vector<char32_t>(code_points.begin() + begin, code_points.begin() + end));
}

std::string to_upper(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Python's str.title(): a letter after a non-letter starts a word.
std::string python_title(const std::string& s) {
  std::string out = s;
  bool in_word = false;
  for (char& c : out) {
    const bool letter = std::isalpha(static_cast<unsigned char>(c)) != 0;
    if (letter) c = static_cast<char>(in_word ? std::tolower(c) : std::toupper(c));
    in_word = letter || (static_cast<unsigned char>(c) >= 0x80 && in_word);
  }
  return out;
}

std::string capitalize(const std::string& s) {
  std::string out = to_lower(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

// Python's str.splitlines().
std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::string line;
  const std::vector<char32_t> cps = decode_utf8(s);
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    if (c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1e) || c == 0x85 ||
        c == 0x2028 || c == 0x2029) {
      if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
      lines.push_back(std::move(line));
      line.clear();
    } else {
      append_utf8(line, c);
    }
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

}  // namespace dq4::jinja
