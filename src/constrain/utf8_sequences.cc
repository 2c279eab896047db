// Code point ranges as byte-range sequences (the construction of RE2's and Rust regex's UTF-8
// compilers): split until lo and hi share every byte but a contiguous span of each position.

#include <cstdint>
#include <utility>
#include <vector>

#include "byte_grammar.h"

namespace dq4::constrain {
namespace {

int encode_utf8_bytes(char32_t c, uint8_t* out) {
  if (c < 0x80) {
    out[0] = static_cast<uint8_t>(c);
    return 1;
  }
  if (c < 0x800) {
    out[0] = static_cast<uint8_t>(0xC0 | (c >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    out[0] = static_cast<uint8_t>(0xE0 | (c >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (c & 0x3F));
    return 3;
  }
  out[0] = static_cast<uint8_t>(0xF0 | (c >> 18));
  out[1] = static_cast<uint8_t>(0x80 | ((c >> 12) & 0x3F));
  out[2] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F));
  out[3] = static_cast<uint8_t>(0x80 | (c & 0x3F));
  return 4;
}

}  // namespace

void utf8_sequences(char32_t lo, char32_t hi,
                    std::vector<std::vector<std::pair<uint8_t, uint8_t>>>& out) {
  if (lo > hi) return;
  for (const char32_t boundary : {char32_t{0x7F}, char32_t{0x7FF}, char32_t{0xFFFF}}) {
    if (lo <= boundary && hi > boundary) {
      utf8_sequences(lo, boundary, out);
      utf8_sequences(boundary + 1, hi, out);
      return;
    }
  }
  for (int i = 1; i < 4; ++i) {
    const char32_t mask = (char32_t{1} << (6 * i)) - 1;
    if ((lo & ~mask) != (hi & ~mask)) {
      if ((lo & mask) != 0) {
        utf8_sequences(lo, lo | mask, out);
        utf8_sequences((lo | mask) + 1, hi, out);
        return;
      }
      if ((hi & mask) != mask) {
        utf8_sequences(lo, (hi & ~mask) - 1, out);
        utf8_sequences(hi & ~mask, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  const int n = encode_utf8_bytes(lo, a);
  encode_utf8_bytes(hi, b);
  std::vector<std::pair<uint8_t, uint8_t>> sequence;
  for (int i = 0; i < n; ++i) sequence.emplace_back(a[i], b[i]);
  out.push_back(std::move(sequence));
}

}  // namespace dq4::constrain
