#pragma once
// The regular expressions of tokenizer.json (Oniguruma syntax in Hugging Face tokenizers), run by
// PCRE2 with UTF + UCP and JIT-compiled. \s and \S are widened to Oniguruma's White_Space set
// (PCRE2's \s leaves out U+0085).

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dq4::tokenizer {

class Regex {
 public:
  // `context` names the file and JSON field for the error thrown on a bad pattern.
  Regex(std::string_view pattern, const std::string& context);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-overlapping matches [begin, end) in `text` (valid UTF-8), left to right. An empty match
  // moves the search on by one character.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  void* code_;  // pcre2_code_8, kept out of this header
};

}  // namespace dq4::tokenizer
