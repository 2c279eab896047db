#pragma once
// Unicode normalization forms and character properties, from ICU. The definitions follow Rust's
// (char::is_whitespace, char::is_numeric, regex \w), which the Hugging Face tokenizers use.

#include <string>
#include <string_view>

namespace dq4::tokenizer {

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

// `text` (valid UTF-8) in the given normalization form.
std::string normalize_unicode(std::string_view text, NormalForm form);

bool is_whitespace(char32_t c);  // the White_Space property
bool is_numeric(char32_t c);     // general category Nd, Nl or No
bool is_word_char(char32_t c);   // Alphabetic, M*, Nd, Pc or Join_Control (regex \w)

}  // namespace dq4::tokenizer
