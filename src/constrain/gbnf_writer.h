#pragma once
// Writing GBNF (llama.cpp's dialect) text: literals and character classes with the escapes its
// parser reads, and a rule set whose names all carry the caller's prefix. Shared by the converters
// in to_gbnf.h.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "code_points.h"
#include "gbnf_parser.h"

namespace dq4::constrain {

// `text` (well-formed UTF-8) as a GBNF string literal, quotes included.
std::string gbnf_literal(std::string_view text);
// One character of `set` (not empty) as a class, `[...]` or `[^...]` whichever is shorter, or a
// literal when the set holds one code point.
std::string gbnf_class(const CodePointSet& set);

// The rules of one grammar under construction. Names passed in and out are without the prefix;
// ref() adds it. The first rule defined is written first (callers define the root first or last;
// text() always writes root first).
class RuleSet {
 public:
  // Throws ConstraintError when `prefix` holds characters a GBNF rule name cannot (letters,
  // digits and '-' only).
  explicit RuleSet(std::string_view prefix);

  // A name no rule has yet, made from `hint` (characters a name cannot hold become '-'), and
  // reserved: define() it later.
  std::string fresh_name(std::string_view hint);
  void define(const std::string& name, std::string body);
  std::string ref(std::string_view name) const { return prefix_ + std::string(name); }
  // Defines a rule for `body` (or returns the one already defined for the same body) and returns
  // a reference to it.
  std::string shared(std::string_view hint, const std::string& body);
  // The grammar: `root` first, then the other rules in the order they were defined. Throws
  // ConstraintError when a reserved name was never defined.
  std::string text() const;

 private:
  std::string prefix_;
  std::map<std::string, std::string, std::less<>> bodies_;  // name -> body ("" = reserved)
  std::vector<std::string> order_;
  std::map<std::string, std::string, std::less<>> by_body_;  // shared(): body -> name
  size_t bytes_ = 0;
};

// The largest bound of a {m,n} the converters write (the parser takes more, but every copy costs
// automaton states).
constexpr int kMaxRepeat = 1000;

}  // namespace dq4::constrain
