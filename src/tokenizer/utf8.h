#pragma once
// UTF-8 helpers: validation, code point iteration and Rust's String::from_utf8_lossy (one U+FFFD
// per maximal invalid subsequence), which the Hugging Face decoders use.

#include <cstddef>
#include <string>
#include <string_view>

namespace dq4::tokenizer {

// Bytes in the sequence that starts with `lead`, for valid UTF-8.
inline size_t utf8_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

// The code point at text[pos] (valid UTF-8); advances pos past it.
char32_t next_code_point(std::string_view text, size_t& pos);

// The code point that ends at text[pos - 1] (valid UTF-8); moves pos back to its first byte.
char32_t previous_code_point(std::string_view text, size_t& pos);

void append_utf8(std::string& out, char32_t c);

// Byte offset of the first byte that is not part of a valid UTF-8 sequence, or npos.
size_t find_invalid_utf8(std::string_view text);

// Throws dq4::Error naming `what` and the offset when text is not valid UTF-8.
void check_utf8(std::string_view text, const std::string& what);

std::string utf8_lossy(std::string_view bytes);

}  // namespace dq4::tokenizer
