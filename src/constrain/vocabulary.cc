#include "vocabulary.h"

#include <algorithm>
#include <limits>

#include "dq4/constrain/constraint.h"

namespace dq4::constrain {
namespace {

// Subtrees at least this large keep the set of bytes below them: the mask takes a whole subtree
// at once when the automaton stays where it is on every one of them (free text in a string).
constexpr uint32_t kByteSetMinNodes = 16;

// valid[d]: bytes[d..] is well-formed UTF-8 but for a last character cut short.
void utf8_suffixes(const std::string& bytes, std::vector<uint8_t>& valid) {
  const size_t n = bytes.size();
  valid.assign(n + 1, 0);
  valid[n] = 1;
  for (size_t d = n; d-- > 0;) {
    const auto lead = static_cast<uint8_t>(bytes[d]);
    size_t length = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // the second byte's range
    if (lead < 0x80) {
      length = 1;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) lo = 0xA0;
      if (lead == 0xED) hi = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) lo = 0x90;
      if (lead == 0xF4) hi = 0x8F;
    }
    if (length == 0) continue;
    bool ok = true;
    size_t i = 1;
    for (; i < length && d + i < n && ok; ++i) {
      const auto c = static_cast<uint8_t>(bytes[d + i]);
      ok = i == 1 ? c >= lo && c <= hi : c >= 0x80 && c <= 0xBF;
    }
    valid[d] = ok && (d + length >= n || valid[d + length]);
  }
}

}  // namespace

Vocabulary::Vocabulary(const Tokenizer& tokenizer, int64_t vocab_size, std::vector<TokenId> eos_ids)
    : size_(vocab_size), eos_ids_(std::move(eos_ids)) {
  if (vocab_size <= 0 || vocab_size > std::numeric_limits<TokenId>::max())
    throw ConstraintError("constraint compiler: vocab_size " + std::to_string(vocab_size) +
                          " out of range");
  for (const TokenId id : eos_ids_)
    if (id < 0 || id >= vocab_size)
      throw ConstraintError("constraint compiler: eos id " + std::to_string(id) +
                            " outside the vocabulary of " + std::to_string(vocab_size));
  bytes_.resize(static_cast<size_t>(vocab_size));
  std::vector<TokenId> order;
  for (TokenId id = 0; id < vocab_size; ++id) {
    if (tokenizer.is_special(id) || is_eos(id)) continue;
    std::optional<std::string> bytes = tokenizer.token_bytes(id);
    if (!bytes || bytes->empty()) continue;
    if (bytes->size() > std::numeric_limits<uint16_t>::max()) continue;
    bytes_[static_cast<size_t>(id)] = std::move(bytes);
    order.push_back(id);
  }
  std::sort(order.begin(), order.end(), [&](TokenId a, TokenId b) {
    return *bytes_[static_cast<size_t>(a)] < *bytes_[static_cast<size_t>(b)];
  });

  std::vector<uint32_t> path;  // the nodes of the previous token's bytes
  std::vector<uint8_t> valid;
  std::vector<uint32_t> parent;
  const std::string* previous = nullptr;
  for (const TokenId id : order) {
    const std::string& bytes = *bytes_[static_cast<size_t>(id)];
    size_t common = 0;
    if (previous != nullptr)
      while (common < previous->size() && common < bytes.size() &&
             (*previous)[common] == bytes[common])
        ++common;
    while (path.size() > common) {
      nodes_[path.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
      path.pop_back();
    }
    for (size_t d = common; d < bytes.size(); ++d) {
      parent.push_back(path.empty() ? std::numeric_limits<uint32_t>::max() : path.back());
      path.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(Node{0, static_cast<uint32_t>(trie_tokens_.size()), -1,
                            static_cast<uint16_t>(d + 1), static_cast<uint8_t>(bytes[d]), true});
    }
    utf8_suffixes(bytes, valid);
    for (size_t d = 0; d < path.size(); ++d) nodes_[path[d]].utf8_below &= valid[d + 1] != 0;
    trie_tokens_.push_back(id);
    max_depth_ = std::max(max_depth_, bytes.size());
    previous = &bytes;
  }
  for (const uint32_t n : path) nodes_[n].subtree_end = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back(Node{static_cast<uint32_t>(nodes_.size() + 1),
                        static_cast<uint32_t>(trie_tokens_.size()), -1, 0, 0, true});

  // The bytes below each node, gathered from the leaves up; kept for the large subtrees only.
  const size_t count = nodes_.size() - 1;
  std::vector<ByteSet> below(count, ByteSet{});
  for (size_t n = count; n-- > 0;) {
    if (parent[n] == std::numeric_limits<uint32_t>::max()) continue;
    ByteSet& up = below[parent[n]];
    for (size_t w = 0; w < 4; ++w) up[w] |= below[n][w];
    up[nodes_[n].byte / 64] |= uint64_t{1} << (nodes_[n].byte % 64);
  }
  for (size_t n = 0; n < count; ++n) {
    if (nodes_[n].subtree_end - n < kByteSetMinNodes) continue;
    nodes_[n].byte_set = static_cast<int32_t>(byte_sets_.size());
    byte_sets_.push_back(below[n]);
  }
}

bool Vocabulary::is_eos(TokenId id) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end();
}

const std::string* Vocabulary::bytes(TokenId id) const {
  if (id < 0 || id >= size_) return nullptr;
  const auto& bytes = bytes_[static_cast<size_t>(id)];
  return bytes ? &*bytes : nullptr;
}

}  // namespace dq4::constrain
