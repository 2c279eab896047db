#pragma once
// The text of one choice as its tokens arrive: detokenized without splitting a UTF-8 character,
// searched for stop strings, and held back while its end could still be the start of one, so that
// no text past a stop string is ever handed out.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dq4/tokenizer/stream_decoder.h"
#include "dq4/tokenizer/tokenizer.h"

namespace dq4::engine {

class ChoiceText {
 public:
  // `prompt`'s last tokens give the decoder its context (a leading space is kept as in a decode of
  // prompt and completion together). `tokenizer` must outlive this.
  ChoiceText(const Tokenizer& tokenizer, std::span<const TokenId> prompt, bool skip_special_tokens,
             std::vector<std::string> stop, bool include_stop);

  // Adds a generated token; returns the text that can be handed out now. When `check_stop` and a
  // stop string appears, returns the text before it (and it, with include_stop) and sets
  // stop_string(); nothing more comes after that.
  std::string add(TokenId id, bool check_stop);
  // The choice ended: whatever is left (held-back text, an incomplete character as U+FFFD), still
  // cut at a stop string when `check_stop`.
  std::string finish(bool check_stop);

  const std::optional<std::string>& stop_string() const { return stop_string_; }

 private:
  std::string release(bool check_stop, bool final);

  StreamDecoder decoder_;
  std::vector<std::string> stop_;
  bool include_stop_;
  std::string held_;  // decoded, not handed out yet
  std::optional<std::string> stop_string_;
};

}  // namespace dq4::engine
