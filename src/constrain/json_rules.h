#pragma once
// The rules of JSON text shared by the JSON schema and JSON object grammars. Every value rule ends
// with the whitespace rule, as do the punctuation uses ("{" ws, ":" ws, "," ws): whitespace may
// follow any token, never precede the first one, and is bounded (nothing, one space, or one newline
// and up to 20 spaces or tabs of indentation), so a model writes its usual `{"a": 1}` or indented
// style and can never spend the output on whitespace alone.

#include <map>
#include <string>

#include "gbnf_writer.h"

namespace dq4::constrain {

class JsonRules {
 public:
  enum class Kind { ws, character, string, number, integer, boolean, null, value, object, array };
  explicit JsonRules(RuleSet& rules) : rules_(rules) {}
  // A reference to the rule, defined on first use.
  std::string ref(Kind kind);

 private:
  RuleSet& rules_;
  std::map<Kind, std::string> names_;
};

}  // namespace dq4::constrain
