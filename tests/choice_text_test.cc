// A choice's streamed text: stop strings found on the decoded text, text that could start one held
// back, never a split UTF-8 character, and everything handed out adding up to the decoded text.
#include "choice_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dq4/tokenizer/tokenizer.h"
#include "stories_fixture.h"

namespace dq4::engine {
namespace {

using test::stories_tokenizer;

struct Split {
  std::vector<TokenId> prompt, generated;
  std::string text;  // what the generated tokens add to the prompt's text
};

Split split(const std::string& prompt, const std::string& full) {
  const Tokenizer& tok = stories_tokenizer();
  Split s;
  s.prompt = tok.encode(prompt, true);
  std::vector<TokenId> all = tok.encode(full, true);
  EXPECT_TRUE(std::equal(s.prompt.begin(), s.prompt.end(), all.begin()));
  s.generated.assign(all.begin() + s.prompt.size(), all.end());
  const std::string before = tok.decode(s.prompt, true), after = tok.decode(all, true);
  EXPECT_EQ(after.compare(0, before.size(), before), 0);
  s.text = after.substr(before.size());
  return s;
}

// Feeds every token, checking after each that no stop string was handed out early.
std::string stream(ChoiceText& text, const std::vector<TokenId>& ids, bool check_stop = true) {
  std::string out;
  for (TokenId id : ids) {
    out += text.add(id, check_stop);
    if (text.stop_string()) return out;
  }
  return out + text.finish(check_stop);
}

TEST(ChoiceText, WithoutStopStringsIsTheDecodedContinuation) {
  const Split s = split("Once upon", "Once upon a time, there was a little girl named Lily.");
  ChoiceText text(stories_tokenizer(), s.prompt, true, {}, false);
  EXPECT_EQ(stream(text, s.generated), s.text);
  EXPECT_EQ(s.text.front(), ' ');  // the prompt's context keeps the leading space
  EXPECT_FALSE(text.stop_string());
}

TEST(ChoiceText, CutsAtTheFirstStopString) {
  const Split s = split("Once upon", "Once upon a time, there was a little girl named Lily.");
  ChoiceText text(stories_tokenizer(), s.prompt, true, {"girl", "was a"}, false);
  EXPECT_EQ(stream(text, s.generated), " a time, there ");
  EXPECT_EQ(text.stop_string(), "was a");
  EXPECT_EQ(text.add(s.generated.back(), true), "");  // nothing after the stop

  ChoiceText with_stop(stories_tokenizer(), s.prompt, true, {"girl", "was a"}, true);
  EXPECT_EQ(stream(with_stop, s.generated), " a time, there was a");
}

// The longest end of `text` that is the start of `stop`.
size_t stop_prefix_at_end(const std::string& text, const std::string& stop) {
  for (size_t k = std::min(text.size(), stop.size() - 1); k > 0; --k)
    if (text.compare(text.size() - k, k, stop, 0, k) == 0) return k;
  return 0;
}

TEST(ChoiceText, HoldsBackWhatCouldStartAStopString) {
  const Split s = split("Once upon", "Once upon a time, there was a little girl named Lily.");
  const std::string stop = "there was a dog";
  ChoiceText text(stories_tokenizer(), s.prompt, true, {stop}, false);
  const Tokenizer& tok = stories_tokenizer();
  const std::string prompt_text = tok.decode(s.prompt, true);
  std::vector<TokenId> all = s.prompt;
  std::string out;
  size_t most_held = 0;
  for (TokenId id : s.generated) {
    out += text.add(id, true);
    all.push_back(id);
    const std::string so_far = tok.decode(all, true).substr(prompt_text.size());
    ASSERT_EQ(so_far.compare(0, out.size(), out), 0) << "handed out text that is not the text";
    const size_t must_hold = stop_prefix_at_end(so_far, stop);
    EXPECT_GE(so_far.size() - out.size(), must_hold) << "after '" << so_far << "'";
    most_held = std::max(most_held, so_far.size() - out.size());
  }
  EXPECT_GE(most_held, std::string("there was a").size());
  out += text.finish(true);
  EXPECT_EQ(out, s.text);  // no dog: everything comes out in the end
  EXPECT_FALSE(text.stop_string());
}

TEST(ChoiceText, StopStringsAreIgnoredWhileNotChecked) {
  const Split s = split("Once upon", "Once upon a time, there was a little girl.");
  ChoiceText text(stories_tokenizer(), s.prompt, true, {"time"}, false);
  EXPECT_EQ(stream(text, s.generated, false), s.text);
}

TEST(ChoiceText, NeverSplitsACharacterAndFindsNonAsciiStops) {
  // Byte-fallback tokens: each emoji is four tokens.
  const Split s =
      split("Once", "Once upon a \xF0\x9F\x98\x80 time \xC3\xA9t\xC3\xA9 \xF0\x9F\x90\xB1 cat");
  ChoiceText plain(stories_tokenizer(), s.prompt, true, {}, false);
  std::string out;
  for (TokenId id : s.generated) {
    const std::string piece = plain.add(id, true);
    // Every piece is whole characters: no lone lead or continuation bytes at its ends.
    if (!piece.empty()) {
      EXPECT_NE(static_cast<unsigned char>(piece.front()) & 0xC0, 0x80) << "split character";
      const unsigned char last = static_cast<unsigned char>(piece.back());
      EXPECT_TRUE(last < 0x80 || (last & 0xC0) == 0x80) << "split character";
    }
    out += piece;
  }
  EXPECT_EQ(out + plain.finish(true), s.text);

  ChoiceText cat(stories_tokenizer(), s.prompt, true, {"\xF0\x9F\x90\xB1"}, false);
  EXPECT_EQ(stream(cat, s.generated), " upon a \xF0\x9F\x98\x80 time \xC3\xA9t\xC3\xA9 ");
  EXPECT_EQ(cat.stop_string(), "\xF0\x9F\x90\xB1");
}

TEST(ChoiceText, ThePromptsTextIsNeverPartOfTheChoices) {
  const Tokenizer& tok = stories_tokenizer();
  // A prompt ending in a byte-fallback token (ESC, a whole character on its own): the decoder
  // takes it as context, never as text of the choice.
  const TokenId esc = *tok.token_to_id("<0x1B>");
  const std::vector<TokenId> prompt = {1, *tok.token_to_id("▁Once"), esc};
  const std::vector<TokenId> generated = tok.encode(" and then", false);
  std::vector<TokenId> all = prompt;
  all.insert(all.end(), generated.begin(), generated.end());
  const std::string before = tok.decode(prompt, true), after = tok.decode(all, true);
  ASSERT_EQ(before.back(), '\x1B');
  ChoiceText text(tok, prompt, true, {}, false);
  const std::string out = stream(text, generated);
  EXPECT_EQ(out, after.substr(before.size()));
  EXPECT_EQ(out.find('\x1B'), std::string::npos);

  // A prompt ending in the first bytes of a character: the choice whose token completes it gets
  // the whole character.
  const std::vector<TokenId> half = {1, *tok.token_to_id("<0xC3>")};
  ChoiceText completed(tok, half, true, {}, false);
  EXPECT_EQ(stream(completed, {*tok.token_to_id("<0xA9>"), *tok.token_to_id("t")}), "\xC3\xA9t");
}

}  // namespace
}  // namespace dq4::engine
