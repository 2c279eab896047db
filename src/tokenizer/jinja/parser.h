#pragma once
// Jinja2's grammar (the parts chat templates use) over the lexer's tokens. Everything else
// ({% include %}, {% extends %}, {% call %}, recursive loops, ...) is a dq4::Error naming the
// construct and its position, as is any syntax error.

#include <string_view>

#include "ast.h"

namespace dq4::jinja {

// Deeper nesting of expressions or blocks is an error, so hostile templates cannot exhaust the
// stack while parsing, rendering or freeing the tree.
inline constexpr int kMaxParseDepth = 100;

Body parse(std::string_view source);

}  // namespace dq4::jinja
