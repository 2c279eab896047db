#pragma once
// A thinking model's reasoning apart from its answer: the text inside <think>...</think> is
// reasoning_content, the text after </think> (leading whitespace dropped) is content. vLLM's
// parser names: qwen3 (Qwen3 writes <think> itself at the start of its output: without it the
// output is all content) and deepseek_r1 (the DeepSeek-R1 distills' templates open <think> in
// the prompt, so the output starts as reasoning and only </think> shows; an output that never
// closes it is all reasoning). Either way the prompt's end decides where the output starts: a
// prompt ending in an open <think> starts it in reasoning, one ending in a closed block (Qwen3
// with enable_thinking false) makes it all content.

#include <optional>
#include <string>
#include <string_view>

namespace dq4::server {

enum class ReasoningFormat { none, qwen3, deepseek_r1 };

std::optional<ReasoningFormat> reasoning_format_from_name(std::string_view name);

inline constexpr std::string_view kThinkStart = "<think>";
inline constexpr std::string_view kThinkEnd = "</think>";

// Where the output starts, for a prompt rendered by the chat template.
enum class ThinkStart { maybe, inside, closed };
ThinkStart think_start(ReasoningFormat format, std::string_view prompt);

struct ReasoningSplit {
  std::string reasoning;
  std::string content;
};

// The split of `text` so far; with at_end false, text that may still become a tag (or the
// whitespace before the answer) is left out of both. Each split extends the one before.
ReasoningSplit split_reasoning(ThinkStart start, std::string_view text, bool at_end);

// The output as it streams: new reasoning and content per piece of text.
class ReasoningStream {
 public:
  explicit ReasoningStream(ThinkStart start) : start_(start) {}
  ReasoningSplit feed(std::string_view text);
  ReasoningSplit finish();

 private:
  ReasoningSplit update(bool at_end);
  ThinkStart start_;
  std::string text_;
  size_t sent_reasoning_ = 0, sent_content_ = 0;
};

}  // namespace dq4::server
