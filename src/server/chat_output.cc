#include "chat_output.h"

#include <random>

namespace dq4::server {

using nlohmann::json;

std::string new_tool_call_id() {
  static constexpr char kAlphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 random(std::random_device{}());
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlphabet[random() % (sizeof kAlphabet - 1)];
  return id;
}

json chat_message(const ChatOutputOptions& options, const std::string& text, bool& called) {
  json message = {{"role", "assistant"}};
  std::string content = text;
  if (options.reasoning) {
    ReasoningSplit split = split_reasoning(options.think_start, text, true);
    message["reasoning_content"] =
        split.reasoning.empty() ? json(nullptr) : json(std::move(split.reasoning));
    content = std::move(split.content);
  }
  called = false;
  if (options.tools == ToolFormat::none) {
    message["content"] = std::move(content);
    return message;
  }
  ParsedToolOutput parsed = parse_tool_calls(options.tools, content);
  message["content"] = parsed.content ? json(std::move(*parsed.content)) : json(nullptr);
  if (parsed.calls.empty()) return message;
  if (options.single_call) parsed.calls.resize(1);
  called = true;
  json calls = json::array();
  for (ToolCall& call : parsed.calls)
    calls.push_back(
        {{"id", new_tool_call_id()},
         {"type", "function"},
         {"function", {{"name", std::move(call.name)}, {"arguments", call.arguments}}}});
  message["tool_calls"] = std::move(calls);
  return message;
}

ChatDeltaStream::ChatDeltaStream(const ChatOutputOptions& options)
    : single_call_(options.single_call) {
  if (options.reasoning) reasoning_.emplace(options.think_start);
  if (options.tools != ToolFormat::none) tools_.emplace(options.tools, new_tool_call_id);
}

void ChatDeltaStream::content(const std::string& text, bool at_end, std::vector<json>& out) {
  if (!tools_) {
    if (!text.empty()) out.push_back({{"content", text}});
    return;
  }
  ToolCallStream::Delta d = tools_->feed(text);
  if (at_end) {
    ToolCallStream::Delta last = tools_->finish();
    d.content += last.content;
    d.calls.insert(d.calls.end(), last.calls.begin(), last.calls.end());
  }
  if (!d.content.empty()) out.push_back({{"content", std::move(d.content)}});
  if (single_call_)
    std::erase_if(d.calls, [](const ToolCallStream::CallDelta& c) { return c.index > 0; });
  if (d.calls.empty()) return;
  json calls = json::array();
  for (ToolCallStream::CallDelta& c : d.calls) {
    json call = {{"index", c.index}};
    json function = {{"arguments", std::move(c.arguments)}};
    if (!c.name.empty()) {
      call["id"] = std::move(c.id);
      call["type"] = "function";
      function["name"] = std::move(c.name);
    }
    call["function"] = std::move(function);
    calls.push_back(std::move(call));
  }
  out.push_back({{"tool_calls", std::move(calls)}});
}

std::vector<json> ChatDeltaStream::feed(const std::string& text) {
  std::vector<json> out;
  if (!reasoning_) {
    content(text, false, out);
    return out;
  }
  ReasoningSplit split = reasoning_->feed(text);
  if (!split.reasoning.empty()) out.push_back({{"reasoning_content", std::move(split.reasoning)}});
  content(split.content, false, out);
  return out;
}

std::vector<json> ChatDeltaStream::finish() {
  std::vector<json> out;
  std::string rest;
  if (reasoning_) {
    ReasoningSplit split = reasoning_->finish();
    if (!split.reasoning.empty())
      out.push_back({{"reasoning_content", std::move(split.reasoning)}});
    rest = std::move(split.content);
  }
  content(rest, true, out);
  return out;
}

}  // namespace dq4::server
