#pragma once
// The GBNF grammar that makes a model call tools: for tool_choice "required" (one call, or one or
// more with parallel_tool_calls) or a named function (exactly one call of it), written in the
// model's own tool-call format so that its parser reads the output back. Each function's
// arguments follow its parameters' JSON schema (json_schema_to_gbnf, rule prefix "fnI-").

#include <string>
#include <vector>

#include "chat_tools.h"
#include "tool_parsers/tool_call_parser.h"

namespace dq4::server {

// `format` must not be none. Throws constrain::ConstraintError for a schema the converter
// refuses (what() names the keyword).
std::string tool_call_grammar(ToolFormat format, const ChatTools& tools);

}  // namespace dq4::server
