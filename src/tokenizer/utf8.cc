#include "utf8.h"

#include "dq4/kernels/error.h"

namespace dq4::tokenizer {
namespace {

// The accepted range of the second byte after `lead` (Unicode table 3-7); later ones are 80..BF.
bool second_byte_ok(unsigned char lead, unsigned char b) {
  switch (lead) {
    case 0xE0:
      return b >= 0xA0 && b <= 0xBF;
    case 0xED:
      return b >= 0x80 && b <= 0x9F;
    case 0xF0:
      return b >= 0x90 && b <= 0xBF;
    case 0xF4:
      return b >= 0x80 && b <= 0x8F;
    default:
      return b >= 0x80 && b <= 0xBF;
  }
}

// Bytes a sequence led by `lead` needs, or 0 when `lead` can never start one.
size_t needed_bytes(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// How many bytes at text[pos] are valid: `complete` tells whether they form a whole sequence.
size_t valid_prefix(std::string_view text, size_t pos, bool& complete) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  const size_t need = needed_bytes(lead);
  complete = false;
  if (need == 0) return 0;
  size_t got = 1;
  while (got < need && pos + got < text.size()) {
    const auto b = static_cast<unsigned char>(text[pos + got]);
    const bool ok = got == 1 ? second_byte_ok(lead, b) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return got;
    ++got;
  }
  complete = got == need;
  return got;
}

}  // namespace

char32_t next_code_point(std::string_view text, size_t& pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  const size_t n = utf8_length(lead);
  char32_t c = n == 1 ? lead : n == 2 ? lead & 0x1F : n == 3 ? lead & 0x0F : lead & 0x07;
  for (size_t i = 1; i < n; ++i) c = (c << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
  pos += n;
  return c;
}

char32_t previous_code_point(std::string_view text, size_t& pos) {
  do --pos;
  while (pos > 0 && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80);
  size_t at = pos;
  return next_code_point(text, at);
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

size_t find_invalid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    bool complete;
    const size_t n = valid_prefix(text, pos, complete);
    if (!complete) return pos;
    pos += n;
  }
  return std::string_view::npos;
}

void check_utf8(std::string_view text, const std::string& what) {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string_view::npos)
    throw Error(what + " is not valid UTF-8 (invalid byte sequence at byte offset " +
                std::to_string(bad) + ")");
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    bool complete;
    const size_t n = valid_prefix(bytes, pos, complete);
    if (complete) {
      out.append(bytes.substr(pos, n));
      pos += n;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD for the maximal valid prefix, or one bad byte
      pos += n == 0 ? 1 : n;
    }
  }
  return out;
}

}  // namespace dq4::tokenizer
