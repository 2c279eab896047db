// regex_to_gbnf: the grammar accepts exactly the whole strings the pattern matches, and what it
// cannot express is refused with the construct and its offset.

#include <gtest/gtest.h>

#include "dq4/constrain/constraint.h"
#include "dq4/constrain/to_gbnf.h"
#include "expect_error.h"
#include "gbnf_acceptor.h"

namespace dq4::constrain {
namespace {

using test::expect_error;
using test::GbnfAcceptor;

GbnfAcceptor regex(const std::string& pattern) { return GbnfAcceptor(regex_to_gbnf(pattern)); }

TEST(RegexGbnf, EscapesAndCounts) {
  auto phone = regex(R"(\d{3}-\d{4})");
  EXPECT_TRUE(phone.accepts("555-1234"));
  EXPECT_FALSE(phone.accepts("555-123"));
  EXPECT_FALSE(phone.accepts("5551234"));
  EXPECT_FALSE(phone.accepts("555-12345"));
  auto bounded = regex("a{2,3}b{2,}");
  EXPECT_TRUE(bounded.accepts("aabb"));
  EXPECT_TRUE(bounded.accepts("aaabbbbb"));
  EXPECT_FALSE(bounded.accepts("abb"));
  EXPECT_FALSE(bounded.accepts("aaaabb"));
  EXPECT_FALSE(bounded.accepts("aab"));
  auto words = regex(R"(\w+\s\W\S)");
  EXPECT_TRUE(words.accepts("ab_9 !x"));
  EXPECT_FALSE(words.accepts("ab_9 a!"));
}

TEST(RegexGbnf, ClassesDotAndAlternation) {
  auto cls = regex("[a-c]+[^abc]x");
  EXPECT_TRUE(cls.accepts("abcdx"));
  EXPECT_TRUE(cls.accepts("a\xC3\xA9x"));  // é, two bytes, is not a, b or c
  EXPECT_FALSE(cls.accepts("abcax"));
  auto dot = regex("a.b");
  EXPECT_TRUE(
      dot.accepts("a\xE6\x97\xA5"
                  "b"));
  EXPECT_FALSE(dot.accepts("a\nb"));
  auto groups = regex("(foo|bar)+(?:baz)?");
  EXPECT_TRUE(groups.accepts("foobarfoo"));
  EXPECT_TRUE(groups.accepts("barbaz"));
  EXPECT_FALSE(groups.accepts("baz"));
  auto special = regex(R"([\]\-^]\.\\"\()");
  EXPECT_TRUE(special.accepts("-.\\\"("));
  EXPECT_TRUE(special.accepts("].\\\"("));
  EXPECT_FALSE(special.accepts("a.\\\"("));
}

TEST(RegexGbnf, UnicodeEscapesAndRanges) {
  auto greek = regex(R"([α-ω]{2}\u00e9\u{1F600}\ud83d\ude00)");
  EXPECT_TRUE(greek.accepts("\xCE\xB2\xCE\xB3\xC3\xA9\xF0\x9F\x98\x80\xF0\x9F\x98\x80"));
  EXPECT_FALSE(greek.accepts("ab\xC3\xA9\xF0\x9F\x98\x80\xF0\x9F\x98\x80"));
}

TEST(RegexGbnf, AnchorsLazyAndEmptyRepetitions) {
  auto anchored = regex("^(ab|cd$)$");
  EXPECT_TRUE(anchored.accepts("ab"));
  EXPECT_TRUE(anchored.accepts("cd"));
  auto lazy = regex("a+?b*?");
  EXPECT_TRUE(lazy.accepts("aab"));
  // Repetitions of what can be empty: GBNF parsers refuse them as written, the rewrite keeps the
  // language.
  auto empty = regex("(a?)*b(c|)+(d*e?)*");
  EXPECT_TRUE(empty.accepts("b"));
  EXPECT_TRUE(empty.accepts("aabcc"));
  EXPECT_TRUE(empty.accepts("bddeed"));
  EXPECT_FALSE(empty.accepts("ab c"));
  auto nothing_but_empty = regex("()*");
  EXPECT_TRUE(nothing_but_empty.accepts(""));
  EXPECT_FALSE(nothing_but_empty.accepts("a"));
  auto brace = regex("a{,2}x{y");  // {,n} as Python reads it; a lone { is a literal
  EXPECT_TRUE(brace.accepts("aax{y"));
  EXPECT_TRUE(brace.accepts("x{y"));
}

TEST(RegexGbnf, RulesCarryThePrefix) {
  const std::string text = regex_to_gbnf("(ab)+c*", "re1-");
  for (size_t line = 0; line < text.size(); line = text.find('\n', line) + 1) {
    EXPECT_EQ(text.compare(line, 4, "re1-"), 0) << text;
  }
  GbnfAcceptor prefixed(text, "re1-root");
  EXPECT_TRUE(prefixed.accepts("ababcc"));
  expect_error([] { regex_to_gbnf("a", "bad prefix"); }, "rule prefix");
}

TEST(RegexGbnf, RefusesWhatItCannotExpress) {
  expect_error([] { regex_to_gbnf(R"((a)\1)"); }, {"backreference \\1", "offset 3"});
  expect_error([] { regex_to_gbnf("(?P<x>a)(?P=x)"); }, {"backreference", "offset 8"});
  expect_error([] { regex_to_gbnf("a(?=b)"); }, {"lookahead", "offset 1"});
  expect_error([] { regex_to_gbnf("(?<!b)a"); }, {"lookbehind", "offset 0"});
  expect_error([] { regex_to_gbnf("a^b"); }, {"anchor ^", "offset 1"});
  expect_error([] { regex_to_gbnf("a$b"); }, {"anchor $", "offset 1"});
  expect_error([] { regex_to_gbnf(R"(a\bc)"); }, {"word boundary", "offset 1"});
  expect_error([] { regex_to_gbnf("(?i)a"); }, "inline flags");
  expect_error([] { regex_to_gbnf("(ab"); }, {"without a matching ')'", "offset 0"});
  expect_error([] { regex_to_gbnf("ab)"); }, "offset 2");
  expect_error([] { regex_to_gbnf("[ab"); }, "without a matching ']'");
  expect_error([] { regex_to_gbnf("*a"); }, "nothing to repeat");
  expect_error([] { regex_to_gbnf("a**"); }, "quantifier on a quantifier");
  expect_error([] { regex_to_gbnf("a{3,2}"); }, "n < m");
  expect_error([] { regex_to_gbnf("a{1001}"); }, "above 1000");
  expect_error([] { regex_to_gbnf("[z-a]"); }, "out of order");
  expect_error([] { regex_to_gbnf(R"(\p{L})"); }, "Unicode property");
  expect_error([] { regex_to_gbnf("a\xFF"); }, {"not UTF-8", "offset 1"});
  expect_error([] { regex_to_gbnf("[^\\s\\S]"); }, "matches nothing");
  expect_error([] { regex_to_gbnf(std::string(65, '(') + std::string(65, ')')); }, "nested deeper");
  expect_error([] { regex_to_gbnf("a\\"); }, "end of the pattern");
}

}  // namespace
}  // namespace dq4::constrain
