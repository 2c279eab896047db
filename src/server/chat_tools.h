#pragma once
// The tool fields of a chat completions request: `tools` (functions with JSON-schema
// parameters), `tool_choice` and `parallel_tool_calls`, validated with errors naming the field;
// and the tool calls and results of earlier turns made ready for the chat template.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dq4::server {

struct ToolFunction {
  std::string name;
  nlohmann::json parameters;  // a JSON schema; {"type": "object", ...} when none was given
};

struct ChatTools {
  enum class Choice { none, automatic, required, named };
  std::vector<ToolFunction> functions;
  Choice choice = Choice::none;  // "auto" when tools are given and tool_choice is not
  std::string named;             // Choice::named: the function's name
  bool parallel_tool_calls = true;
};

// From the request body (an object). Throws ApiError (400) naming the field.
ChatTools read_chat_tools(const nlohmann::json& body);

// Checks message `where` (messages[i]) for tool fields: an assistant's tool_calls (each
// {"id", "type": "function", "function": {"name", "arguments"}}) get their arguments as JSON
// objects, as the chat templates of Llama 3.1 and others expect (and a null content ""); a tool
// message's tool_call_id must be a string. Throws ApiError naming the field.
void prepare_tool_message(nlohmann::json& message, const std::string& where);

}  // namespace dq4::server
