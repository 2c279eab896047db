#pragma once
// One loaded tokenizer.json: the stages Hugging Face runs, in order. Encode: added tokens (raw),
// normalizer, added tokens (normalized), pre-tokenizer, model, post-processor. Decode: ids to
// token strings (added tokens first), decoder chain, join.
//
// The file's "truncation" and "padding" blocks are not read: they are the settings the tokenizer
// was last used with in training (batches cut and padded to a length), which transformers and
// vLLM do not apply when they encode a prompt. A prompt is encoded whole; one longer than the
// model's context is the caller's error to report, never silently cut.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "added_tokens.h"
#include "bpe.h"
#include "decoders.h"
#include "dq4/tokenizer/tokenizer.h"
#include "normalizers.h"
#include "post_processors.h"
#include "pre_tokenizers.h"

namespace dq4::tokenizer {

class Pipeline {
 public:
  // `root` is the whole tokenizer.json document.
  explicit Pipeline(const JsonNode& root);

  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens) const;
  std::string decode(std::span<const TokenId> ids, bool skip_special_tokens) const;

  std::optional<TokenId> token_to_id(std::string_view token) const;
  // The text of `id`: an added token's content, else the model's token; null when neither.
  const std::string* id_to_token(TokenId id) const;
  bool is_special(TokenId id) const;
  // See Tokenizer::token_bytes.
  std::optional<std::string> token_bytes(TokenId id) const;
  size_t vocab_size() const { return vocab_size_; }
  const std::vector<AddedToken>& added_tokens() const { return added_.tokens(); }

  std::optional<TokenId> bos_id, eos_id;  // from tokenizer_config.json, set by the loader

 private:
  void encode_segment(std::string_view text, bool at_input_start, std::vector<TokenId>& ids) const;

  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  AddedTokens added_;
  std::vector<int> added_by_id_;     // index into added_.tokens() by id, or -1
  std::vector<bool> special_by_id_;  // the id's text is a special token's content
  size_t vocab_size_ = 0;
};

}  // namespace dq4::tokenizer
