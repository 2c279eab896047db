// End-to-end: dq4 chat-template renders a fixture's template for a conversation on stdin.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "cli_runner.h"
#include "fixtures.h"

namespace dq4::test {
namespace {

constexpr const char* kConversation =
    R"({"messages": [{"role": "user", "content": "Hi\n"}, {"role": "assistant", "content": "Yo"}]})";

TEST(CliChatTemplate, RendersTheFixtureTemplateExactly) {
  const CliResult r = run_dq4("chat-template -t " + shell_quote(fixture_path("tokenizer-llama3")) +
                                  " --add-generation-prompt",
                              kConversation);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nYo<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(CliChatTemplate, TakesABareListAndATemplateFile) {
  const std::string path = testing::TempDir() + "dq4_cli_chat_template.jinja";
  std::ofstream(path) << "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{% endfor %}\n";
  const CliResult r =
      run_dq4("chat-template --tokenizer " + shell_quote(fixture_path("tokenizer-mistral")) +
                  " --template " + shell_quote(path),
              R"([{"role": "user", "content": "x"}])");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<s>[user]");  // the file's trailing newline is dropped, as Jinja2 does
}

TEST(CliChatTemplate, ErrorsNameTheCause) {
  CliResult r = run_dq4("chat-template -t " + shell_quote(fixture_path("tokenizer-mistral")), "[]");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has no \"chat_template\""), std::string::npos) << r.err;
  r = run_dq4("chat-template -t " + shell_quote(fixture_path("tokenizer-qwen3")), "{oops");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;
  r = run_dq4("chat-template", "[]");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--tokenizer"), std::string::npos) << r.err;
  const std::string path = testing::TempDir() + "dq4_cli_chat_template_raise.jinja";
  std::ofstream(path) << "{{ raise_exception('no system role here') }}";
  r = run_dq4("chat-template --template " + shell_quote(path), "[]");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no system role here"), std::string::npos) << r.err;
}

TEST(CliChatTemplate, HasHelp) {
  const CliResult r = run_dq4("chat-template --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: dq4 chat-template"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--add-generation-prompt"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace dq4::test
