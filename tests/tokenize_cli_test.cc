// End-to-end tests of `dq4 tokenize`: the real binary on the fixture tokenizers (ids known from
// Hugging Face tokenizers on the same tokenizer.json).

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"
#include "fixtures.h"

namespace dq4::test {
namespace {

nlohmann::json output_of(const CliResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(!r.out.empty() && r.out.back() == '\n') << r.out;
  return nlohmann::json::parse(r.out, nullptr, false);
}

TEST(TokenizeCli, EncodesStdinExactlyAndDecodesBack) {
  const std::string dir = fixture_path("tokenizer-mistral");
  // Trailing spaces, tabs and newlines survive the round trip: stdin is taken byte for byte.
  // (Leading spaces would not: Mistral's decoder strips the first one, as Hugging Face's does.)
  for (const std::string& text :
       {std::string("trailing spaces  "), std::string("tab\tseparated\tvalues\t"),
        std::string("line one\nline two\r\n")}) {
    SCOPED_TRACE(text);
    const nlohmann::json plain = output_of(run_dq4("tokenize -t " + shell_quote(dir), text));
    const nlohmann::json special =
        output_of(run_dq4("tokenize --add-special-tokens -t " + shell_quote(dir), text));
    ASSERT_TRUE(plain.contains("ids"));
    ASSERT_TRUE(special.contains("ids"));
    EXPECT_EQ(special["ids"][0], 1);  // <s>
    EXPECT_EQ(special["ids"].size(), plain["ids"].size() + 1);
    const nlohmann::json decoded = output_of(run_dq4("tokenize --decode -t " + shell_quote(dir),
                                                     nlohmann::json{{"ids", plain["ids"]}}.dump()));
    EXPECT_EQ(decoded["text"], text);
  }
}

TEST(TokenizeCli, MatchesKnownIds) {
  const std::string dir = fixture_path("tokenizer-llama3");
  EXPECT_EQ(output_of(run_dq4("tokenize -t " + shell_quote(dir), "Hello world"))["ids"],
            nlohmann::json({9906, 1917}));
  EXPECT_EQ(output_of(run_dq4("tokenize --add-special-tokens -t " + shell_quote(dir),
                              "Hello world"))["ids"],
            nlohmann::json({128000, 9906, 1917}));
  // Special tokens written in the text are matched without --add-special-tokens too.
  EXPECT_EQ(output_of(run_dq4("tokenize -t " + shell_quote(dir), "<|eot_id|>"))["ids"],
            nlohmann::json({128009}));
  EXPECT_EQ(output_of(run_dq4("tokenize -t " + shell_quote(dir), ""))["ids"],
            nlohmann::json::array());
}

TEST(TokenizeCli, DecodesWithAndWithoutSpecialTokens) {
  const std::string dir = fixture_path("tokenizer-llama3");
  const std::string ids = R"({"ids": [128000, 9906, 1917, 128009]})";
  EXPECT_EQ(output_of(run_dq4("tokenize --decode -t " + shell_quote(dir), ids))["text"],
            "<|begin_of_text|>Hello world<|eot_id|>");
  EXPECT_EQ(output_of(run_dq4("tokenize --decode --skip-special-tokens -t " + shell_quote(dir),
                              ids))["text"],
            "Hello world");
}

TEST(TokenizeCli, InvalidUtf8IsAClearError) {
  const CliResult r =
      run_dq4("tokenize -t " + shell_quote(fixture_path("tokenizer-mistral")), "ok\xff");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not valid UTF-8"), std::string::npos) << r.err;
}

TEST(TokenizeCli, BadArgumentsAndInputAreClearErrors) {
  const std::string dir = shell_quote(fixture_path("tokenizer-mistral"));
  CliResult r = run_dq4("tokenize");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--tokenizer"), std::string::npos) << r.err;
  r = run_dq4("tokenize -t /nonexistent-dq4-dir");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent-dq4-dir/tokenizer.json"), std::string::npos) << r.err;
  r = run_dq4("tokenize --decode -t " + dir, "[1, 2]");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("{\"ids\": [...]}"), std::string::npos) << r.err;
  r = run_dq4("tokenize --decode -t " + dir, R"({"ids": [1, "x"]})");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("ids[1]"), std::string::npos) << r.err;
  r = run_dq4("tokenize --decode --add-special-tokens -t " + dir, R"({"ids": []})");
  EXPECT_EQ(r.exit_code, 1);
  r = run_dq4("tokenize --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--decode"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--add-special-tokens"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace dq4::test
