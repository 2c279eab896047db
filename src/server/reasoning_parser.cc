#include "reasoning_parser.h"

#include "tool_parsers/json_scan.h"

namespace dq4::server {
namespace {

using tool_parsers::marker_arriving;
using tool_parsers::partial_marker_suffix;
using tool_parsers::skip_whitespace;

std::string_view without_trailing_space(std::string_view text) {
  const size_t end = text.find_last_not_of(" \t\r\n");
  return end == std::string_view::npos ? std::string_view() : text.substr(0, end + 1);
}

}  // namespace

std::optional<ReasoningFormat> reasoning_format_from_name(std::string_view name) {
  if (name == "qwen3") return ReasoningFormat::qwen3;
  if (name == "deepseek_r1") return ReasoningFormat::deepseek_r1;
  return std::nullopt;
}

ThinkStart think_start(ReasoningFormat format, std::string_view prompt) {
  const std::string_view tail = without_trailing_space(prompt);
  if (tail.ends_with(kThinkEnd)) return ThinkStart::closed;
  if (tail.ends_with(kThinkStart)) return ThinkStart::inside;
  return format == ReasoningFormat::deepseek_r1 ? ThinkStart::inside : ThinkStart::maybe;
}

ReasoningSplit split_reasoning(ThinkStart start, std::string_view text, bool at_end) {
  ReasoningSplit out;
  if (start == ThinkStart::closed) {
    out.content = std::string(text);
    return out;
  }
  // An opening tag at the output's start is skipped (models that open the block themselves).
  size_t pos = skip_whitespace(text, 0);
  if (text.substr(pos).starts_with(kThinkStart)) {
    pos += kThinkStart.size();
  } else if (!at_end && marker_arriving(text, pos, kThinkStart)) {
    return out;
  } else if (start == ThinkStart::maybe) {
    out.content = std::string(text);
    return out;
  } else {
    pos = 0;
  }
  const size_t end = text.find(kThinkEnd, pos);
  if (end == std::string_view::npos) {
    const size_t held = at_end ? 0 : partial_marker_suffix(text.substr(pos), kThinkEnd);
    out.reasoning = std::string(text.substr(pos, text.size() - pos - held));
    return out;
  }
  out.reasoning = std::string(text.substr(pos, end - pos));
  const size_t answer = skip_whitespace(text, end + kThinkEnd.size());
  if (answer < text.size() || at_end) out.content = std::string(text.substr(answer));
  return out;
}

ReasoningSplit ReasoningStream::feed(std::string_view text) {
  text_ += text;
  return update(false);
}

ReasoningSplit ReasoningStream::finish() { return update(true); }

ReasoningSplit ReasoningStream::update(bool at_end) {
  const ReasoningSplit all = split_reasoning(start_, text_, at_end);
  ReasoningSplit delta;
  if (all.reasoning.size() > sent_reasoning_)
    delta.reasoning = all.reasoning.substr(sent_reasoning_);
  if (all.content.size() > sent_content_) delta.content = all.content.substr(sent_content_);
  sent_reasoning_ = std::max(sent_reasoning_, all.reasoning.size());
  sent_content_ = std::max(sent_content_, all.content.size());
  return delta;
}

}  // namespace dq4::server
