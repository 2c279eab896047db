#pragma once
// The ids of pre-tokens already seen, so that repeated words skip the model: one flat
// open-addressing table (hash, offsets into two arenas) that costs one cache miss per lookup.
// Fixed capacity; once full it keeps what it has. Safe for concurrent use.

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dq4/tokenizer/tokenizer.h"

namespace dq4::tokenizer {

class PieceCache {
 public:
  PieceCache();
  // Appends the ids cached for `piece` to `out`; false when there are none.
  bool lookup(std::string_view piece, std::vector<TokenId>& out) const;
  void insert(std::string_view piece, std::span<const TokenId> ids);

 private:
  struct Slot {
    uint64_t hash = 0;  // 0: empty
    uint32_t text_offset = 0, text_length = 0, ids_offset = 0, ids_length = 0;
  };
  static uint64_t hash_of(std::string_view piece);
  // The slot holding `piece`, or the empty slot where it would go.
  const Slot& find(std::string_view piece, uint64_t hash) const;

  std::vector<Slot> slots_;
  std::string text_;
  std::vector<TokenId> ids_;
  size_t used_ = 0;
  mutable std::mutex mutex_;
};

}  // namespace dq4::tokenizer
