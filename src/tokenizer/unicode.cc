#include "unicode.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <vector>

#include "dq4/kernels/error.h"

namespace dq4::tokenizer {
namespace {

const UNormalizer2* normalizer_for(NormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const UNormalizer2* n = nullptr;
  switch (form) {
    case NormalForm::kNfc:
      n = unorm2_getNFCInstance(&status);
      break;
    case NormalForm::kNfd:
      n = unorm2_getNFDInstance(&status);
      break;
    case NormalForm::kNfkc:
      n = unorm2_getNFKCInstance(&status);
      break;
    case NormalForm::kNfkd:
      n = unorm2_getNFKDInstance(&status);
      break;
  }
  if (U_FAILURE(status)) throw Error(std::string("ICU normalizer: ") + u_errorName(status));
  return n;
}

void check(UErrorCode status, const char* what) {
  if (U_FAILURE(status))
    throw Error(std::string("Unicode normalization: ") + what + ": " + u_errorName(status));
}

}  // namespace

std::string normalize_unicode(std::string_view text, NormalForm form) {
  bool ascii = true;
  for (const char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);  // every form leaves ASCII unchanged
  const UNormalizer2* normalizer = normalizer_for(form);

  UErrorCode status = U_ZERO_ERROR;
  std::vector<UChar> utf16(text.size() + 1);
  int32_t utf16_length = 0;
  u_strFromUTF8(utf16.data(), static_cast<int32_t>(utf16.size()), &utf16_length, text.data(),
                static_cast<int32_t>(text.size()), &status);
  check(status, "UTF-8 to UTF-16");

  // Decomposition can grow the text (up to 18x for a single code point in NFKD): retry once
  // with the size ICU asks for.
  std::vector<UChar> normalized(static_cast<size_t>(utf16_length) * 3 + 16);
  status = U_ZERO_ERROR;
  int32_t length = unorm2_normalize(normalizer, utf16.data(), utf16_length, normalized.data(),
                                    static_cast<int32_t>(normalized.size()), &status);
  if (status == U_BUFFER_OVERFLOW_ERROR) {
    normalized.resize(static_cast<size_t>(length));
    status = U_ZERO_ERROR;
    length = unorm2_normalize(normalizer, utf16.data(), utf16_length, normalized.data(),
                              static_cast<int32_t>(normalized.size()), &status);
  }
  check(status, "normalize");

  std::string out(static_cast<size_t>(length) * 3, '\0');
  int32_t out_length = 0;
  status = U_ZERO_ERROR;
  u_strToUTF8(out.data(), static_cast<int32_t>(out.size()), &out_length, normalized.data(), length,
              &status);
  check(status, "UTF-16 to UTF-8");
  out.resize(static_cast<size_t>(out_length));
  return out;
}

bool is_whitespace(char32_t c) {
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE);
}

bool is_numeric(char32_t c) {
  const int8_t type = u_charType(static_cast<UChar32>(c));
  return type == U_DECIMAL_DIGIT_NUMBER || type == U_LETTER_NUMBER || type == U_OTHER_NUMBER;
}

bool is_word_char(char32_t c) {
  const auto cp = static_cast<UChar32>(c);
  const int8_t type = u_charType(cp);
  return u_hasBinaryProperty(cp, UCHAR_ALPHABETIC) || type == U_NON_SPACING_MARK ||
         type == U_ENCLOSING_MARK || type == U_COMBINING_SPACING_MARK ||
         type == U_DECIMAL_DIGIT_NUMBER || type == U_CONNECTOR_PUNCTUATION ||
         u_hasBinaryProperty(cp, UCHAR_JOIN_CONTROL);
}

}  // namespace dq4::tokenizer
