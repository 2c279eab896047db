#pragma once
// A tokenizer's vocabulary as the bytes each token adds to the output, in a trie (preorder arrays)
// that the mask walks once per step: tokens sharing a prefix share its walk.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dq4/tokenizer/tokenizer.h"

namespace dq4::constrain {

class Vocabulary {
 public:
  // Ids from 0 to vocab_size - 1; those the tokenizer lacks, its special tokens and tokens of no
  // bytes are never allowed inside the output. `eos_ids` end it.
  Vocabulary(const Tokenizer& tokenizer, int64_t vocab_size, std::vector<TokenId> eos_ids);

  int64_t size() const { return size_; }
  const std::vector<TokenId>& eos_ids() const { return eos_ids_; }
  bool is_eos(TokenId id) const;
  // The token's bytes, or null when it may never be part of the output.
  const std::string* bytes(TokenId id) const;

  // Trie nodes in preorder: a node stands for the byte string of the path to it. The sentinel
  // last node only marks the end of the tokens.
  struct Node {
    uint32_t subtree_end;  // the first node after this node's descendants
    uint32_t token_begin;  // tokens ending here: [token_begin, next node's token_begin)
    int32_t byte_set;      // index into byte_sets (the bytes below this node), or -1
    uint16_t depth;        // bytes from the root (the root itself is not a node)
    uint8_t byte;
    bool utf8_below;  // below this node every token goes on in whole characters (its last cut)
  };
  using ByteSet = std::array<uint64_t, 4>;
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<TokenId>& trie_tokens() const { return trie_tokens_; }
  const std::vector<ByteSet>& byte_sets() const { return byte_sets_; }
  size_t max_depth() const { return max_depth_; }

 private:
  int64_t size_;
  std::vector<TokenId> eos_ids_;
  std::vector<std::optional<std::string>> bytes_;
  std::vector<Node> nodes_;
  std::vector<TokenId> trie_tokens_;
  std::vector<ByteSet> byte_sets_;
  size_t max_depth_ = 0;
};

}  // namespace dq4::constrain
