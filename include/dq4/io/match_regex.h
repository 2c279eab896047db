#pragma once
// The "re:" patterns of compressed-tensors targets and ignore lists: Python regexes applied with
// re.match, i.e. anchored at the start of the module name but not at its end. PCRE2 reads the
// Python syntax these lists use.

#include <memory>
#include <string>
#include <string_view>

namespace dq4::io {

class MatchRegex {
 public:
  // Throws dq4::Error "<where>: bad regex '<pattern>': <reason>".
  MatchRegex(const std::string& pattern, const std::string& where);
  bool matches_start(std::string_view text) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  std::string pattern_;
  std::shared_ptr<const Code> code_;
};

}  // namespace dq4::io
