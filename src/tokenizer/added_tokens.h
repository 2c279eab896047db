#pragma once
// tokenizer.json "added_tokens": matched in the input before the model sees it, as Hugging Face's
// AddedVocabulary does: tokens with "normalized": false are found in the raw text first, then
// those with "normalized": true in each normalized remaining part; leftmost-longest, honouring
// single_word, lstrip and rstrip.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dq4/tokenizer/tokenizer.h"
#include "json_node.h"

namespace dq4::tokenizer {

struct AddedToken {
  std::string content;
  // What the id decodes to: the content, normalized when the token is (as Hugging Face keeps it).
  std::string text;
  TokenId id = 0;
  bool special = false, normalized = false, lstrip = false, rstrip = false, single_word = false;
};

// A part of the text: either an added token or text for the model.
struct TextSplit {
  size_t begin, end;
  int token;  // index into AddedTokens::tokens(), or -1
};

// A byte trie of token texts, for leftmost-longest search.
class TokenTrie {
 public:
  void insert(std::string_view text, int value);
  // The longest text starting at text[pos] and its value, or {0, -1}.
  std::pair<size_t, int> longest_at(std::string_view text, size_t pos) const;
  bool empty() const { return nodes_.size() <= 1; }

 private:
  struct Node {
    int value = -1;
    std::vector<std::pair<unsigned char, int>> children;
  };
  std::vector<Node> nodes_{Node{}};
  bool first_byte_[256] = {};
};

class AddedTokens {
 public:
  AddedTokens() = default;
  // `list` is the "added_tokens" array. `normalize` gives a normalized token's matching form;
  // `model_id` looks a text up in the model's vocabulary of `model_size` tokens.
  template <typename Normalize, typename ModelId>
  AddedTokens(const JsonNode& list, Normalize normalize, ModelId model_id, size_t model_size);

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  // The id of an added token's content.
  std::optional<TokenId> find(std::string_view content) const;
  // Splits `text` on the tokens with the given "normalized" flag.
  std::vector<TextSplit> split(std::string_view text, bool normalized) const;

 private:
  void add(AddedToken token);
  TokenId next_id(size_t model_size) const;

  std::vector<AddedToken> tokens_;
  TokenTrie raw_, normalized_;
};

template <typename Normalize, typename ModelId>
AddedTokens::AddedTokens(const JsonNode& list, Normalize normalize, ModelId model_id,
                         size_t model_size) {
  for (size_t i = 0; i < list.size(); ++i) {
    const JsonNode item = list.at(i);
    AddedToken t;
    t.content = item.get_string("content");
    const JsonNode id = item.at("id");
    if (id.as_int() < 0 || id.as_int() > INT32_MAX) id.fail("expected an id in [0, 2^31)");
    t.special = item.get_bool("special", false);
    t.normalized = item.get_bool("normalized", !t.special);
    t.lstrip = item.get_bool("lstrip", false);
    t.rstrip = item.get_bool("rstrip", false);
    t.single_word = item.get_bool("single_word", false);
    if (t.content.empty()) continue;  // Hugging Face ignores empty tokens
    // Hugging Face takes the id the text already has (model or earlier added token), else the
    // next one after the vocabulary; the file's "id" only draws a warning there.
    std::optional<TokenId> known = find(t.content);
    if (!known) known = model_id(t.content);
    t.id = known ? *known : next_id(model_size);
    t.text = t.normalized ? normalize(t.content) : t.content;
    add(std::move(t));
  }
}

}  // namespace dq4::tokenizer
