#pragma once
// One loaded tokenizer.json: the stages Hugging Face runs, in order. Encode: added tokens (raw),
// normalizer, added tokens (normalized), pre-tokenizer, model, truncation, post-processor.
// Decode: ids to token strings (added tokens first), decoder chain, join.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "added_tokens.h"
#include "bpe.h"
#include "decoders.h"
#include "dq4/tokenizer.h"
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
  size_t vocab_size() const { return vocab_size_; }
  const std::vector<AddedToken>& added_tokens() const { return added_.tokens(); }

  std::optional<TokenId> bos_id, eos_id;  // from tokenizer_config.json, set by the loader

 private:
  void encode_segment(std::string_view text, bool at_input_start, std::vector<TokenId>& ids) const;
  void truncate(std::vector<TokenId>& ids, bool add_special_tokens) const;

  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  AddedTokens added_;
  std::vector<int> added_by_id_;     // index into added_.tokens() by id, or -1
  std::vector<bool> special_by_id_;  // the id's text is a special token's content
  size_t vocab_size_ = 0;
  std::optional<size_t> max_length_;  // truncation
  bool truncate_left_ = false;
};

}  // namespace dq4::tokenizer
