#pragma once
// Incremental detokenization: ids go in one at a time, text comes out only as complete UTF-8,
// and everything step() and finish() return, concatenated, equals
// tokenizer.decode(all ids, skip_special_tokens).
//
// Like Hugging Face's DecodeStream and vLLM, each step decodes a short window of recent ids and
// returns what it adds to the window's already-returned prefix; the prefix keeps at least one
// token so that decoders which treat the first token differently (Metaspace, Strip) see the
// same context as a full decode. The window only moves past points where a full decode cannot
// change what came before: the text so far ends in a complete character, the last id is not a
// byte-fallback token <0xXX> (a later one could join its group), and the window's new first id
// is a kept token whose text is not empty. (A decoder after Fuse whose pattern spans more than
// the window's first token, e.g. a long multi-token Replace, is the one case this cannot see.)

#include <span>
#include <string>
#include <vector>

#include "dq4/tokenizer/tokenizer.h"

namespace dq4 {

class StreamDecoder {
 public:
  // `tokenizer` must outlive the decoder. `context`: ids that come before the first step()'s
  // (e.g. a prompt's last ones), decoded as context only: their text is not returned, unless
  // later ids change it (complete a character the context began, or make its trailing
  // byte-fallback group invalid): then what they changed is.
  StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens,
                std::span<const TokenId> context = {});

  // The text that `id` completes; empty while a character is still incomplete.
  std::string step(TokenId id);
  // Whatever is left (e.g. an incomplete character, as U+FFFD). Then the decoder starts afresh.
  std::string finish();

 private:
  bool kept(TokenId id) const;  // not left out of decode()
  // What decoding the window to `text` adds to what was returned.
  std::string new_text(const std::string& text);

  const Tokenizer* tokenizer_;
  bool skip_special_tokens_;
  std::vector<TokenId> window_;  // the ids from the window's start
  size_t read_ = 0;              // window_[0, read_) decode to prefix_, all of it returned
  std::string prefix_;
  // The context's whole text while its end is not yet in prefix_ (see the constructor).
  std::string context_text_;
};

}  // namespace dq4
