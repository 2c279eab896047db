#pragma once
// A chat choice's text as the assistant message OpenAI's API returns: reasoning apart from
// content (with a reasoning parser), tool calls parsed out of the content (when the request's
// tools may be called). Whole (message) or streamed (deltas), with the same result.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "reasoning_parser.h"
#include "tool_parsers/tool_call_parser.h"

namespace dq4::server {

struct ChatOutputOptions {
  bool reasoning = false;  // split <think> reasoning out
  ThinkStart think_start = ThinkStart::maybe;
  ToolFormat tools = ToolFormat::none;  // none: the content is not parsed for calls
  // parallel_tool_calls false: the first call only, the model's others dropped (as vLLM does).
  bool single_call = false;
  bool active() const { return reasoning || tools != ToolFormat::none; }
};

// "call_" and 24 random letters and digits.
std::string new_tool_call_id();

// {"role": "assistant", "content", "reasoning_content" (with a reasoning parser), "tool_calls"
// (when calls were found)}; `called` tells whether they were.
nlohmann::json chat_message(const ChatOutputOptions& options, const std::string& text,
                            bool& called);

// The streamed form: each piece of text becomes zero or more deltas, {"reasoning_content"},
// {"content"} or {"tool_calls": [{"index", "id", "type", "function": {"name", "arguments"}}]}.
class ChatDeltaStream {
 public:
  explicit ChatDeltaStream(const ChatOutputOptions& options);
  std::vector<nlohmann::json> feed(const std::string& text);
  std::vector<nlohmann::json> finish();
  bool called() const { return tools_ && tools_->has_calls(); }

 private:
  void content(const std::string& text, bool at_end, std::vector<nlohmann::json>& out);
  std::optional<ReasoningStream> reasoning_;
  std::optional<ToolCallStream> tools_;
  bool single_call_ = false;
};

}  // namespace dq4::server
