// The GBNF parser and compiler: what each construct matches (whole texts, bytes), and errors
// that name the line, column and rule.

#include <gtest/gtest.h>

#include <string>

#include "constrain_test_support.h"
#include "dq4/constrain/constraint.h"

namespace dq4::test {
namespace {

struct MatchCase {
  std::string gbnf, text;
  bool matches;
};

TEST(Gbnf, ConstructsMatchWhatLlamaCppMatches) {
  const std::vector<MatchCase> cases = {
      {R"(root ::= "abc")", "abc", true},
      {R"(root ::= "abc")", "ab", false},
      {R"(root ::= "abc")", "abcd", false},
      {R"(root ::= "a" | "b" | "cd")", "cd", true},
      {R"(root ::= "a" | "b" | "cd")", "c", false},
      {"root ::= \"a\"\n  | \"b\"  # a continued rule\n", "b", true},
      {R"(root ::= [a-c0-9_]+)", "a0_c9", true},
      {R"(root ::= [a-c0-9_]+)", "", false},
      {R"(root ::= [a-c0-9_]+)", "d", false},
      {R"(root ::= [^a-c]*)", "xyz!", true},
      {R"(root ::= [^a-c]*)", "xaz", false},
      {R"(root ::= [a-]+)", "a-a", true},
      {R"(root ::= . . .)", "a\xC3\xA9z", true},  // `.` is one code point, any length
      {R"(root ::= .)", "\xC3", false},           // never a piece of one
      {R"(root ::= .)", "\xF0\x9F\x9A\x80", true},
      {R"(root ::= [é-ü]+)", "\xC3\xA9\xC3\xBC", true},
      {R"(root ::= [é-ü]+)", "e", false},
      {R"(root ::= [^\x00-\x7F]+)", "東京", true},
      {R"(root ::= [^\x00-\x7F]+)", "東x", false},
      {R"(root ::= [\u4E00-\u9FFF]{2})", "東京", true},
      {R"(root ::= [\U0001F600-\U0001F64F])", "\xF0\x9F\x98\x80", true},
      {R"(root ::= [\U0001F600-\U0001F64F])", "\xF0\x9F\x9A\x80", false},
      {R"(root ::= "\x41\u00e9\t\n\r\\\"")", "A\xC3\xA9\t\n\r\\\"", true},
      {R"(root ::= ("ab" | "c")* "d")", "abcabd", true},
      {R"(root ::= ("ab" | "c")* "d")", "abad", false},
      {R"(root ::= "a"? "b")", "b", true},
      {R"(root ::= "a"{3})", "aaa", true},
      {R"(root ::= "a"{3})", "aa", false},
      {R"(root ::= "a"{2,})", "aaaaa", true},
      {R"(root ::= "a"{2,})", "a", false},
      {R"(root ::= "a"{1,3})", "aaa", true},
      {R"(root ::= "a"{1,3})", "aaaa", false},
      {R"(root ::= "a"{,2})", "", true},
      {"root ::= x-y\nx-y ::= \"(\" x-y? \")\"", "((()))", true},
      {"root ::= x-y\nx-y ::= \"(\" x-y? \")\"", "(()", false},
      {"root ::= item+\nitem ::= \"a\" | nothing\nnothing ::= \"\"", "aaa", true},
      {"root ::= (\n  \"a\" |\n  \"b\"\n)", "b", true},
  };
  for (const MatchCase& c : cases)
    EXPECT_EQ(grammar_matches(c.gbnf, c.text), c.matches) << c.gbnf << " on \"" << c.text << '"';
}

TEST(Gbnf, PrefixesOfSentencesAreLive) {
  EXPECT_TRUE(grammar_prefix(R"(root ::= "abc")", "ab"));
  EXPECT_FALSE(grammar_prefix(R"(root ::= "abc")", "ac"));
  EXPECT_TRUE(grammar_prefix(R"(root ::= [é])", "\xC3"));  // half of é
  EXPECT_FALSE(grammar_prefix(R"(root ::= [é])", "\xC4"));
}

void expect_grammar_error(const std::string& gbnf, const std::string& message) {
  try {
    grammar_of(gbnf);
    ADD_FAILURE() << "accepted: " << gbnf;
  } catch (const constrain::ConstraintError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos)
        << "grammar: " << gbnf << "\nerror: " << e.what() << "\nexpected: " << message;
  }
}

TEST(Gbnf, ErrorsNameThePositionAndTheRule) {
  expect_grammar_error(R"(root ::= "abc)", "line 1, column 10 (rule 'root'): unterminated literal");
  expect_grammar_error("root ::= \"a\"\n  | b-c\n",
                       "line 2, column 5 (rule 'root'): undefined rule 'b-c'");
  expect_grammar_error(R"(start ::= "a")", "no rule 'root'");
  expect_grammar_error(R"(root ::= root "x")", "line 1, column 1 (rule 'root'): left recursion");
  expect_grammar_error("root ::= a\na ::= b? root \"x\"\nb ::= \"y\"",
                       "(rule 'root'): left recursion");
  expect_grammar_error(R"(root ::= [z-a])",
                       "line 1, column 11 (rule 'root'): empty character range");
  expect_grammar_error(R"(root ::= "a"{10001})", "repetition bound too large");
  expect_grammar_error(R"(root ::= "a"{3,2})", "the maximum is below the minimum");
  expect_grammar_error(R"(root ::= ("ab"{1000}){1000})", "grammar too large");
  expect_grammar_error(R"(root ::= "a" ))", "line 1, column 14 (rule 'root'): unexpected ')'");
  expect_grammar_error("root ::= " + std::string(200, '(') + "\"a\"" + std::string(200, ')'),
                       "nested too deeply");
  expect_grammar_error(R"(root ::= "\q")", "unknown escape");
  expect_grammar_error(R"(root ::= "\xZZ")", "hex digits");
  expect_grammar_error(R"(root ::= [^\x00-\U0010FFFF])", "matches no text at all");
  expect_grammar_error("root ::= \"a\"\nroot ::= \"b\"",
                       "line 2, column 1 (rule 'root'): rule 'root' is defined twice");
  expect_grammar_error(R"(root = "a")", "expected ::=");
  expect_grammar_error("root ::= \"a\" x ::= \"b\"", "starts on the line of the previous rule");
  expect_grammar_error("root ::= \"\xC3\"", "invalid UTF-8");
  expect_grammar_error("root ::= <think>", "token references");
  expect_grammar_error("root ::= [abc", "unterminated character class");
  expect_grammar_error("root ::= \"a\"{2", "expected '}'");
}

}  // namespace
}  // namespace dq4::test
