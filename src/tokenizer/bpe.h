#pragma once
// The BPE model of tokenizer.json: vocab, merges (ranked), byte_fallback, unk_token (fuse_unk),
// continuing_subword_prefix, end_of_word_suffix and ignore_merges, merged exactly as Hugging
// Face's Word::merge_all (lowest rank first, leftmost first) with a priority queue over a linked
// list of symbols. Results per pre-token are cached.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dq4/tokenizer/tokenizer.h"
#include "json_node.h"
#include "piece_cache.h"

namespace dq4::tokenizer {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};
template <typename T>
using StringMap = std::unordered_map<std::string, T, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // `model` is tokenizer.json's "model" object (type BPE).
  explicit BpeModel(const JsonNode& model);

  // Appends the ids of one pre-token.
  void tokenize(std::string_view piece, std::vector<TokenId>& out) const;

  std::optional<TokenId> token_to_id(std::string_view token) const;
  // The token of `id`, or null when the vocabulary has none.
  const std::string* id_to_token(TokenId id) const;
  // Tokens in the vocabulary.
  size_t vocab_count() const { return vocab_.size(); }
  // One more than the largest id of the vocabulary.
  size_t id_limit() const { return tokens_.size(); }

 private:
  struct Merge {
    uint32_t rank;
    TokenId merged;
  };
  static uint64_t pair_key(TokenId a, TokenId b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  void load_merges(const JsonNode& merges);
  void merge_word(std::string_view piece, std::vector<TokenId>& out) const;

  StringMap<TokenId> vocab_;
  std::vector<const std::string*> tokens_;  // by id; null where no token has the id
  std::unordered_map<uint64_t, Merge> merges_;
  std::optional<std::string> unk_token_;
  std::string continuing_subword_prefix_, end_of_word_suffix_, where_;
  bool byte_fallback_ = false, fuse_unk_ = false, ignore_merges_ = false;
  std::vector<TokenId> byte_ids_;  // <0xXX> tokens by byte value; -1 where missing

  mutable PieceCache cache_;
};

}  // namespace dq4::tokenizer
