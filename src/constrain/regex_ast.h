#pragma once
// Regular expressions as the converters read them: the subset that both ECMAScript and Python
// accept and that users of vLLM and outlines write (literals, escapes, classes, `.`, groups,
// alternation, greedy or lazy quantifiers, anchors at the ends), parsed into a small tree whose
// language is the set of whole strings the pattern matches.

#include <string_view>
#include <vector>

#include "code_points.h"

namespace dq4::constrain {

struct RegexNode {
  enum class Kind {
    nothing,  // matches no string (what remains of a repetition with nothing to repeat)
    empty,    // matches only the empty string
    chars,    // one code point of `chars`
    concat,   // `children` one after another
    alt,      // one of `children`
    repeat,   // children[0] between `min` and `max` times (max -1: no limit)
  };
  Kind kind = Kind::empty;
  CodePointSet chars;
  std::vector<RegexNode> children;
  int min = 0;
  int max = 0;
};

// Parses `pattern` (UTF-8) and rewrites the tree so that no repetition repeats something that can
// match the empty string (GBNF parsers, llama.cpp's among them, refuse such a repetition as left
// recursion). Throws ConstraintError naming the construct and its byte offset for what it cannot
// express (backreferences, lookarounds, anchors inside the pattern, inline flags ...).
RegexNode parse_regex(std::string_view pattern);

}  // namespace dq4::constrain
