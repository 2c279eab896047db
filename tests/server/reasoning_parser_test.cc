// Reasoning apart from the answer: whole outputs and the same streamed byte by byte.

#include "reasoning_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace dq4::server {
namespace {

void expect_split(ThinkStart start, const std::string& text, const std::string& reasoning,
                  const std::string& content) {
  SCOPED_TRACE(text);
  const ReasoningSplit whole = split_reasoning(start, text, true);
  EXPECT_EQ(whole.reasoning, reasoning);
  EXPECT_EQ(whole.content, content);
  ReasoningStream stream(start);
  ReasoningSplit joined;
  for (char c : text) {
    const ReasoningSplit d = stream.feed(std::string(1, c));
    joined.reasoning += d.reasoning;
    joined.content += d.content;
  }
  const ReasoningSplit last = stream.finish();
  EXPECT_EQ(joined.reasoning + last.reasoning, reasoning);
  EXPECT_EQ(joined.content + last.content, content);
}

TEST(ReasoningParser, Qwen3OpensTheBlockItself) {
  expect_split(ThinkStart::maybe, "<think>\nadd them\n</think>\n\n4", "\nadd them\n", "4");
  expect_split(ThinkStart::maybe, "No thinking here.", "", "No thinking here.");
  expect_split(ThinkStart::maybe, "<think>cut short", "cut short", "");
  expect_split(ThinkStart::maybe, "<thin", "", "<thin");
  expect_split(ThinkStart::maybe, "<think>a</think>", "a", "");
}

TEST(ReasoningParser, DeepSeekR1StartsInsideTheBlock) {
  expect_split(ThinkStart::inside, "weigh it</think>\n\nYes.", "weigh it", "Yes.");
  expect_split(ThinkStart::inside, "<think>weigh it</think>Yes.", "weigh it", "Yes.");
  expect_split(ThinkStart::inside, "never closed </thi", "never closed </thi", "");
}

TEST(ReasoningParser, ClosedBlockInThePromptMeansAllContent) {
  expect_split(ThinkStart::closed, "<think>x</think>y", "", "<think>x</think>y");
}

TEST(ReasoningParser, StartFromThePrompt) {
  EXPECT_EQ(think_start(ReasoningFormat::qwen3, "<|im_start|>assistant\n"), ThinkStart::maybe);
  EXPECT_EQ(think_start(ReasoningFormat::qwen3, "<|im_start|>assistant\n<think>\n\n</think>\n\n"),
            ThinkStart::closed);
  EXPECT_EQ(think_start(ReasoningFormat::qwen3, "<|Assistant|><think>\n"), ThinkStart::inside);
  EXPECT_EQ(think_start(ReasoningFormat::deepseek_r1, "<|Assistant|>"), ThinkStart::inside);
  EXPECT_EQ(reasoning_format_from_name("deepseek_r1"), ReasoningFormat::deepseek_r1);
  EXPECT_EQ(reasoning_format_from_name("granite"), std::nullopt);
}

}  // namespace
}  // namespace dq4::server
