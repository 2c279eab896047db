#pragma once
// llama.cpp's GBNF grammar format (grammars/README.md there): `name ::= alternatives` rules,
// literals, character classes, `.`, groups, `*` `+` `?` `{m}` `{m,}` `{m,n}` `{,n}`, `#` comments.
// Rule names take letters, digits, `-` and `_`. Newlines end a rule except inside parentheses or
// before a line starting with `|`.

#include <string>
#include <string_view>

#include "gbnf_ast.h"

namespace dq4::constrain {

// Limits that keep a hostile grammar from exhausting memory or the stack.
inline constexpr size_t kMaxGrammarBytes = 1 << 20;
inline constexpr int kMaxNesting = 100;
inline constexpr int kMaxRepetition = 10000;

// Throws ConstraintError naming the line, column and rule of the first error.
GbnfGrammar parse_gbnf(std::string_view text);

// "line L, column C" of byte `offset` in `text` (columns count characters, from 1).
std::string text_position(std::string_view text, size_t offset);

}  // namespace dq4::constrain
