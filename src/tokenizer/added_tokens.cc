#include "added_tokens.h"

#include <algorithm>

#include "unicode.h"
#include "utf8.h"

namespace dq4::tokenizer {

void TokenTrie::insert(std::string_view text, int value) {
  size_t node = 0;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    int child = -1;
    for (const auto& [b, index] : nodes_[node].children)
      if (b == byte) child = index;
    if (child < 0) {
      child = static_cast<int>(nodes_.size());
      nodes_[node].children.emplace_back(byte, child);
      nodes_.emplace_back();
    }
    node = static_cast<size_t>(child);
  }
  // The first of several tokens with the same text wins, like the first Aho-Corasick pattern.
  if (nodes_[node].value < 0) nodes_[node].value = value;
  if (!text.empty()) first_byte_[static_cast<unsigned char>(text[0])] = true;
}

std::pair<size_t, int> TokenTrie::longest_at(std::string_view text, size_t pos) const {
  std::pair<size_t, int> best{0, -1};
  if (!first_byte_[static_cast<unsigned char>(text[pos])]) return best;
  size_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    int child = -1;
    for (const auto& [b, index] : nodes_[node].children)
      if (b == static_cast<unsigned char>(text[i])) child = index;
    if (child < 0) break;
    node = static_cast<size_t>(child);
    if (nodes_[node].value >= 0) best = {i + 1 - pos, nodes_[node].value};
  }
  return best;
}

void AddedTokens::add(AddedToken token) {
  const int index = static_cast<int>(tokens_.size());
  (token.normalized ? normalized_ : raw_).insert(token.text, index);
  tokens_.push_back(std::move(token));
}

std::optional<TokenId> AddedTokens::find(std::string_view content) const {
  for (const AddedToken& t : tokens_)
    if (t.content == content) return t.id;
  return std::nullopt;
}

TokenId AddedTokens::next_id(size_t model_size) const {
  const auto size = static_cast<TokenId>(model_size);
  if (tokens_.empty()) return size;
  TokenId max = 0;
  for (const AddedToken& t : tokens_) max = std::max(max, t.id);
  return max >= size || size == 0 ? max + 1 : size;
}

std::vector<TextSplit> AddedTokens::split(std::string_view text, bool normalized) const {
  const TokenTrie& trie = normalized ? normalized_ : raw_;
  std::vector<TextSplit> splits;
  size_t done = 0;  // end of the last token taken
  if (!trie.empty()) {
    for (size_t pos = 0; pos < text.size();) {
      const auto [length, index] = trie.longest_at(text, pos);
      if (index < 0) {
        ++pos;
        continue;
      }
      const AddedToken& token = tokens_[static_cast<size_t>(index)];
      size_t begin = pos, end = pos + length;
      if (token.single_word) {
        size_t at = begin;
        const bool word_before = begin > 0 && is_word_char(previous_code_point(text, at));
        at = end;
        const bool word_after = end < text.size() && is_word_char(next_code_point(text, at));
        if (word_before || word_after) {
          pos = end;  // not a match; the search goes on after it, as Aho-Corasick's does
          continue;
        }
      }
      if (token.lstrip) {
        size_t at = begin;
        while (at > done) {
          size_t before = at;
          if (!is_whitespace(previous_code_point(text, before))) break;
          at = before;
        }
        begin = at;
      }
      if (token.rstrip) {
        while (end < text.size()) {
          size_t after = end;
          if (!is_whitespace(next_code_point(text, after))) break;
          end = after;
        }
      }
      if (done < begin) splits.push_back({done, begin, -1});
      splits.push_back({begin, end, index});
      done = end;
      pos = end;
    }
  }
  if (done < text.size()) splits.push_back({done, text.size(), -1});
  return splits;
}

}  // namespace dq4::tokenizer
