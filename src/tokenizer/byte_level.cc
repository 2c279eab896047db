#include "dq4/tokenizer/byte_level.h"

#include <array>

#include "utf8.h"

namespace dq4::tokenizer {
namespace {

struct Alphabet {
  std::array<std::string, 256> chars;
  std::array<int, 512> bytes;  // every alphabet code point is below 0x144

  Alphabet() {
    bytes.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const char32_t c = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
      append_utf8(chars[b], c);
      bytes[c] = b;
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet kAlphabet;
  return kAlphabet;
}

}  // namespace

const std::string& byte_level_char(uint8_t byte) { return alphabet().chars[byte]; }

void append_byte_level(std::string& out, std::string_view text) {
  const Alphabet& a = alphabet();
  for (const char c : text) out += a.chars[static_cast<uint8_t>(c)];
}

int byte_level_byte(char32_t c) { return c < 512 ? alphabet().bytes[c] : -1; }

}  // namespace dq4::tokenizer
