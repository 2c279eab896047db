#include "dq4/io/match_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "dq4/kernels/error.h"

namespace dq4::io {

struct MatchRegex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

MatchRegex::MatchRegex(const std::string& pattern, const std::string& where) : pattern_(pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  auto code = std::make_shared<Code>();
  code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                             PCRE2_ANCHORED | PCRE2_UTF, &error, &offset, nullptr);
  if (code->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw Error(where + ": bad regex '" + pattern + "' at offset " + std::to_string(offset) + ": " +
                reinterpret_cast<const char*>(message));
  }
  code_ = std::move(code);
}

bool MatchRegex::matches_start(std::string_view text) const {
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  if (data == nullptr) throw Error("regex '" + pattern_ + "': out of memory");
  // PCRE2_NO_UTF_CHECK is not passed: a module name that is not UTF-8 simply does not match.
  const int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0,
                             0, data, nullptr);
  pcre2_match_data_free(data);
  return rc >= 0;
}

}  // namespace dq4::io
