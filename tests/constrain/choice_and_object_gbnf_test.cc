// choice_to_gbnf and json_object_gbnf.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dq4/constrain/constraint.h"
#include "dq4/constrain/to_gbnf.h"
#include "expect_error.h"
#include "gbnf_acceptor.h"

namespace dq4::constrain {
namespace {

using test::expect_error;
using test::GbnfAcceptor;

TEST(ChoiceGbnf, ExactlyOneChoiceWithEscapes) {
  const std::vector<std::string> choices = {"yes", "no", "say \"hi\"\n\\", "caf\xC3\xA9", "no"};
  GbnfAcceptor g(choice_to_gbnf(choices));
  for (const auto& c : choices) EXPECT_TRUE(g.accepts(c)) << c;
  EXPECT_FALSE(g.accepts("ye"));
  EXPECT_FALSE(g.accepts("yesno"));
  EXPECT_FALSE(g.accepts("cafe"));
  EXPECT_FALSE(g.accepts(""));
  GbnfAcceptor with_empty(choice_to_gbnf(std::vector<std::string>{"", "a"}));
  EXPECT_TRUE(with_empty.accepts(""));
}

TEST(ChoiceGbnf, RefusesAnEmptyListAndBadUtf8) {
  expect_error([] { choice_to_gbnf(std::vector<std::string>{}); }, "empty");
  expect_error(
      [] {
        choice_to_gbnf(std::vector<std::string>{"a", "\xC3"});
      },
      "choice 1 is not valid UTF-8");
}

TEST(JsonObjectGbnf, AnyObjectWithBoundedWhitespace) {
  GbnfAcceptor g(json_object_gbnf());
  EXPECT_TRUE(g.accepts("{}"));
  EXPECT_TRUE(g.accepts(R"({"a": 1, "b": [true, null, -2.5e3, "x\u00e9\n"], "c": {"d": {}}})"));
  EXPECT_TRUE(g.accepts("{\n  \"a\": [\n    1\n  ]\n}\n"));
  EXPECT_TRUE(g.accepts("{\"k\":\"\xE6\x97\xA5\xE6\x9C\xAC\"}"));
  EXPECT_FALSE(g.accepts("[1]"));
  EXPECT_FALSE(g.accepts(" {}"));
  EXPECT_FALSE(g.accepts("{\"a\":1"));
  EXPECT_FALSE(g.accepts("{\"a\":01}"));
  EXPECT_FALSE(g.accepts("{\"a\":\"\x01\"}"));
  EXPECT_FALSE(g.accepts("{\"a\":\"\\x\"}"));
  EXPECT_FALSE(g.accepts("{\"a\":1,}"));
  // Whitespace is bounded: one newline and up to 20 spaces of indentation, or one space.
  EXPECT_TRUE(g.accepts("{\n" + std::string(20, ' ') + "}"));
  EXPECT_FALSE(g.accepts("{\n" + std::string(21, ' ') + "}"));
  EXPECT_FALSE(g.accepts("{  }"));
  EXPECT_FALSE(g.accepts("{\n\n}"));
}

}  // namespace
}  // namespace dq4::constrain
