#include "json_scan.h"

#include <nlohmann/json.hpp>

namespace dq4::server::tool_parsers {
namespace {

constexpr int kMaxDepth = 64;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

ScanResult partial(std::string_view text) { return {ScanStatus::partial, text.size()}; }
ScanResult invalid(size_t at) { return {ScanStatus::invalid, at}; }

ScanResult scan_string(std::string_view text, size_t pos) {
  size_t i = pos + 1;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"') return {ScanStatus::complete, i + 1};
    if (c < 0x20) return invalid(i);
    if (c != '\\') {
      ++i;
      continue;
    }
    if (i + 1 >= text.size()) return partial(text);
    const char e = text[i + 1];
    if (e == 'u') {
      for (size_t k = i + 2; k < i + 6; ++k) {
        if (k >= text.size()) return partial(text);
        if (!is_hex(text[k])) return invalid(k);
      }
      i += 6;
    } else if (std::string_view("\"\\/bfnrt").find(e) != std::string_view::npos) {
      i += 2;
    } else {
      return invalid(i + 1);
    }
  }
  return partial(text);
}

ScanResult scan_number(std::string_view text, size_t pos) {
  size_t i = pos;
  const auto at_end = [&] { return i >= text.size(); };
  if (text[i] == '-') {
    ++i;
    if (at_end()) return partial(text);
  }
  if (text[i] == '0') {
    ++i;
  } else if (is_digit(text[i])) {
    while (!at_end() && is_digit(text[i])) ++i;
  } else {
    return invalid(i);
  }
  if (at_end()) return partial(text);
  if (text[i] == '.') {
    ++i;
    if (at_end()) return partial(text);
    if (!is_digit(text[i])) return invalid(i);
    while (!at_end() && is_digit(text[i])) ++i;
    if (at_end()) return partial(text);
  }
  if (text[i] == 'e' || text[i] == 'E') {
    ++i;
    if (!at_end() && (text[i] == '+' || text[i] == '-')) ++i;
    if (at_end()) return partial(text);
    if (!is_digit(text[i])) return invalid(i);
    while (!at_end() && is_digit(text[i])) ++i;
    if (at_end()) return partial(text);
  }
  return {ScanStatus::complete, i};
}

ScanResult scan_literal(std::string_view text, size_t pos, std::string_view word) {
  for (size_t k = 0; k < word.size(); ++k) {
    if (pos + k >= text.size()) return partial(text);
    if (text[pos + k] != word[k]) return invalid(pos + k);
  }
  return {ScanStatus::complete, pos + word.size()};
}

ScanResult scan(std::string_view text, size_t pos, int depth);

// An object's or array's members after its opening bracket.
ScanResult scan_container(std::string_view text, size_t pos, int depth, bool object) {
  const char close = object ? '}' : ']';
  size_t i = skip_whitespace(text, pos + 1);
  if (i >= text.size()) return partial(text);
  if (text[i] == close) return {ScanStatus::complete, i + 1};
  for (;;) {
    if (object) {
      if (text[i] != '"') return invalid(i);
      const ScanResult key = scan_string(text, i);
      if (key.status != ScanStatus::complete) return key;
      i = skip_whitespace(text, key.end);
      if (i >= text.size()) return partial(text);
      if (text[i] != ':') return invalid(i);
      i = skip_whitespace(text, i + 1);
      if (i >= text.size()) return partial(text);
    }
    const ScanResult value = scan(text, i, depth + 1);
    if (value.status != ScanStatus::complete) return value;
    i = skip_whitespace(text, value.end);
    if (i >= text.size()) return partial(text);
    if (text[i] == close) return {ScanStatus::complete, i + 1};
    if (text[i] != ',') return invalid(i);
    i = skip_whitespace(text, i + 1);
    if (i >= text.size()) return partial(text);
  }
}

ScanResult scan(std::string_view text, size_t pos, int depth) {
  if (pos >= text.size()) return partial(text);
  if (depth > kMaxDepth) return invalid(pos);
  switch (text[pos]) {
    case '{':
      return scan_container(text, pos, depth, true);
    case '[':
      return scan_container(text, pos, depth, false);
    case '"':
      return scan_string(text, pos);
    case 't':
      return scan_literal(text, pos, "true");
    case 'f':
      return scan_literal(text, pos, "false");
    case 'n':
      return scan_literal(text, pos, "null");
    default:
      return scan_number(text, pos);
  }
}

}  // namespace

size_t skip_whitespace(std::string_view text, size_t pos) {
  while (pos < text.size() && is_space(text[pos])) ++pos;
  return pos;
}

ScanResult scan_value(std::string_view text, size_t pos) { return scan(text, pos, 0); }

std::optional<std::string> decode_string(std::string_view text, size_t pos, size_t end) {
  try {
    const nlohmann::json value = nlohmann::json::parse(text.substr(pos, end - pos));
    if (value.is_string()) return value.get<std::string>();
  } catch (const nlohmann::json::exception&) {
  }
  return std::nullopt;
}

size_t partial_marker_suffix(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

bool marker_arriving(std::string_view text, size_t pos, std::string_view marker) {
  const std::string_view rest = text.substr(pos);
  return rest.size() < marker.size() && marker.substr(0, rest.size()) == rest;
}

}  // namespace dq4::server::tool_parsers
