#pragma once
// GPT-2's byte-level alphabet: each of the 256 byte values stands for one printable code point
// (printable Latin-1 bytes for themselves, the others for U+0100 upwards).

#include <cstdint>
#include <string>
#include <string_view>

namespace dq4::tokenizer {

// The UTF-8 of the code point that stands for `byte`.
const std::string& byte_level_char(uint8_t byte);

// Appends the byte-level form of `text`'s bytes to `out`.
void append_byte_level(std::string& out, std::string_view text);

// The byte a code point stands for, or -1 when it is not in the alphabet.
int byte_level_byte(char32_t c);

}  // namespace dq4::tokenizer
