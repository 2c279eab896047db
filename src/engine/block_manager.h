#pragma once
// Who owns which block of the KV pool. Blocks are reference-counted: a sequence holds one
// reference per block of its table. With prefix caching, a full block whose keys and values have
// been computed is registered under the hash of (parent block's hash, its token ids); another
// sequence starting with the same tokens takes a reference instead of recomputing them. A block
// nobody holds stays findable until it is needed for something else: free blocks are handed out
// least recently freed first, and handing out a cached one evicts it from the cache.

#include <cstdint>
#include <span>
#include <vector>

#include "dq4/tokenizer/tokenizer.h"

namespace dq4::engine {

// A sequence's blocks: blocks[i] holds positions [i * block_size, (i + 1) * block_size).
struct BlockTable {
  std::vector<int32_t> blocks;
  std::vector<uint64_t> hashes;  // of blocks[0, hashes.size()): the full blocks hashed so far
};

// hash -> block of the cached blocks: open addressing with linear probing over a table fixed at
// construction (at least twice as many slots as entries can be), so that registering a block
// never allocates.
class BlockIndex {
 public:
  explicit BlockIndex(int64_t max_entries = 0);
  int32_t find(uint64_t hash) const;          // -1: absent
  void insert(uint64_t hash, int32_t block);  // `hash` must be absent
  void erase(uint64_t hash);                  // `hash` must be present

 private:
  struct Slot {
    uint64_t hash = 0;
    int32_t block = -1;  // -1: empty
  };
  size_t home(uint64_t hash) const { return static_cast<size_t>(hash) & mask_; }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

// Cached full blocks matching the start of a sequence's tokens, not yet taken.
struct PrefixHit {
  std::vector<int32_t> blocks;
  std::vector<uint64_t> hashes;
};

class BlockManager {
 public:
  BlockManager(int64_t num_blocks, int64_t block_size, bool prefix_caching);

  int64_t num_blocks() const { return static_cast<int64_t>(blocks_.size()); }
  int64_t block_size() const { return block_size_; }
  int64_t free_blocks() const { return free_count_; }  // held by nobody (cached or not)
  int64_t used_blocks() const { return num_blocks() - free_count_; }
  bool prefix_caching() const { return prefix_caching_; }

  // The longest run of cached blocks equal to the start of `tokens`, always leaving the last token
  // out (its logits must be computed). Empty without prefix caching. `variant` is what else the
  // keys and values depend on (longrope's factor set): blocks cached under another are not found.
  PrefixHit find_prefix(std::span<const TokenId> tokens, uint64_t variant = 0) const;

  // Grows `table` to cover `num_tokens` positions: first takes `hit`'s blocks (only into an empty
  // table), then fresh ones. Returns false, changing nothing, when too few blocks are free.
  bool allocate(BlockTable& table, int64_t num_tokens, const PrefixHit& hit = {});

  // Registers the full blocks among the first `num_computed` positions of `tokens` (their keys and
  // values are in the cache now, computed as `variant` says) so that other sequences can find them.
  void cache_full_blocks(BlockTable& table, std::span<const TokenId> tokens, int64_t num_computed,
                         uint64_t variant = 0);

  // Drops the table's references and empties it. Its cached blocks stay findable until evicted.
  void free(BlockTable& table);

  int32_t ref_count(int32_t block) const { return blocks_[block].refs; }
  bool is_cached(int32_t block) const;

 private:
  struct Block {
    int32_t refs = 0;
    bool hashed = false;
    uint64_t hash = 0, parent_hash = 0;
    int32_t prev = -1, next = -1;  // free queue links, while refs == 0
  };
  // What a hashed block's hash stands for, checked on every hit: its tokens.
  std::span<const TokenId> tokens_of(int32_t block) const;
  int32_t lookup(uint64_t parent_hash, uint64_t hash, std::span<const TokenId> tokens) const;
  void queue_push_back(int32_t block);
  void queue_remove(int32_t block);
  int32_t queue_pop_front();
  void evict(int32_t block);

  int64_t block_size_;
  bool prefix_caching_;
  std::vector<Block> blocks_;
  int32_t head_ = -1, tail_ = -1;  // free queue: least recently freed at the head
  int64_t free_count_ = 0;
  BlockIndex cached_;
  std::vector<TokenId> block_tokens_;  // block_size per block, with prefix caching
};

// The hash of a full block given its parent's (root_hash(variant) for the first block).
inline constexpr uint64_t kRootHash = 0x9e3779b97f4a7c15ull;
uint64_t root_hash(uint64_t variant);
uint64_t block_hash(uint64_t parent_hash, std::span<const TokenId> tokens);

}  // namespace dq4::engine
