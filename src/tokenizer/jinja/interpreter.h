#pragma once
// Renders a parsed template with Jinja2's semantics: Python values, scopes (a for loop's body
// gets a fresh scope each iteration; {% if %} gets none), the loop object, macros, loop
// controls, and the default Undefined (prints as "", fails when used further).

#include <string>

#include "ast.h"
#include "builtins.h"

namespace dq4::jinja {

// Renders `body` with `context` (messages, tools, bos_token, ...) over the globals. Errors are
// dq4::Error naming the template position; raise_exception's message is kept as written.
std::string render(const Body& body, const ValueDict& context);

}  // namespace dq4::jinja
