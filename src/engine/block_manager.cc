#include "block_manager.h"

#include <algorithm>
#include <cassert>
#include <string>

#include "dq4/kernels/error.h"

namespace dq4::engine {

namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace

uint64_t root_hash(uint64_t variant) { return variant == 0 ? kRootHash : mix(kRootHash ^ variant); }

uint64_t block_hash(uint64_t parent_hash, std::span<const TokenId> tokens) {
  uint64_t h = mix(parent_hash ^ tokens.size());
  for (TokenId t : tokens) h = mix(h ^ static_cast<uint32_t>(t)) + 0x9e3779b97f4a7c15ull;
  return h;
}

BlockIndex::BlockIndex(int64_t max_entries) {
  size_t size = 1;
  while (size < static_cast<size_t>(max_entries) * 2) size *= 2;
  slots_.resize(size);
  mask_ = size - 1;
}

int32_t BlockIndex::find(uint64_t hash) const {
  for (size_t i = home(hash); slots_[i].block >= 0; i = (i + 1) & mask_)
    if (slots_[i].hash == hash) return slots_[i].block;
  return -1;
}

void BlockIndex::insert(uint64_t hash, int32_t block) {
  size_t i = home(hash);
  while (slots_[i].block >= 0) i = (i + 1) & mask_;
  slots_[i] = {hash, block};
}

void BlockIndex::erase(uint64_t hash) {
  size_t hole = home(hash);
  while (slots_[hole].hash != hash || slots_[hole].block < 0) hole = (hole + 1) & mask_;
  // Backward shift: an entry after the hole moves into it unless its home lies cyclically in
  // (hole, its slot], where a lookup starting at its home would still reach it.
  for (size_t j = (hole + 1) & mask_; slots_[j].block >= 0; j = (j + 1) & mask_) {
    const size_t k = home(slots_[j].hash);
    const bool stays = hole <= j ? (hole < k && k <= j) : (hole < k || k <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    hole = j;
  }
  slots_[hole].block = -1;
}

BlockManager::BlockManager(int64_t num_blocks, int64_t block_size, bool prefix_caching)
    : block_size_(block_size), prefix_caching_(prefix_caching) {
  if (num_blocks <= 0 || num_blocks > INT32_MAX)
    throw Error("BlockManager: block count " + std::to_string(num_blocks) + " out of range");
  if (block_size <= 0)
    throw Error("BlockManager: block size " + std::to_string(block_size) + " must be positive");
  blocks_.resize(num_blocks);
  if (prefix_caching) {
    cached_ = BlockIndex(num_blocks);
    block_tokens_.resize(static_cast<size_t>(num_blocks * block_size));
  }
  for (int32_t b = 0; b < num_blocks; ++b) queue_push_back(b);
}

std::span<const TokenId> BlockManager::tokens_of(int32_t block) const {
  return std::span(block_tokens_)
      .subspan(static_cast<size_t>(block * block_size_), static_cast<size_t>(block_size_));
}

bool BlockManager::is_cached(int32_t block) const {
  const Block& b = blocks_[block];
  return b.hashed && cached_.find(b.hash) == block;
}

int32_t BlockManager::lookup(uint64_t parent_hash, uint64_t hash,
                             std::span<const TokenId> tokens) const {
  const int32_t block = cached_.find(hash);
  if (block < 0) return -1;
  // A hash collision must never hand out somebody else's keys and values.
  const std::span<const TokenId> cached = tokens_of(block);
  if (blocks_[block].parent_hash != parent_hash ||
      !std::equal(tokens.begin(), tokens.end(), cached.begin(), cached.end()))
    return -1;
  return block;
}

PrefixHit BlockManager::find_prefix(std::span<const TokenId> tokens, uint64_t variant) const {
  PrefixHit hit;
  if (!prefix_caching_ || tokens.empty()) return hit;
  const int64_t full = static_cast<int64_t>(tokens.size() - 1) / block_size_;
  uint64_t parent = root_hash(variant);
  for (int64_t i = 0; i < full; ++i) {
    auto block_tokens = tokens.subspan(i * block_size_, block_size_);
    const uint64_t h = block_hash(parent, block_tokens);
    const int32_t b = lookup(parent, h, block_tokens);
    if (b < 0) break;
    hit.blocks.push_back(b);
    hit.hashes.push_back(h);
    parent = h;
  }
  return hit;
}

bool BlockManager::allocate(BlockTable& table, int64_t num_tokens, const PrefixHit& hit) {
  assert(hit.blocks.empty() || table.blocks.empty());
  const int64_t have = static_cast<int64_t>(table.blocks.size() + hit.blocks.size());
  const int64_t fresh = std::max<int64_t>(0, (num_tokens + block_size_ - 1) / block_size_ - have);
  // Hit blocks nobody holds sit in the free queue: taking them leaves fewer for fresh ones.
  const int64_t idle_hits = std::count_if(hit.blocks.begin(), hit.blocks.end(),
                                          [&](int32_t b) { return blocks_[b].refs == 0; });
  if (fresh > free_count_ - idle_hits) return false;
  for (size_t i = 0; i < hit.blocks.size(); ++i) {
    const int32_t b = hit.blocks[i];
    if (blocks_[b].refs++ == 0) queue_remove(b);
    table.blocks.push_back(b);
    table.hashes.push_back(hit.hashes[i]);
  }
  for (int64_t i = 0; i < fresh; ++i) {
    const int32_t b = queue_pop_front();
    evict(b);
    blocks_[b].refs = 1;
    table.blocks.push_back(b);
  }
  return true;
}

void BlockManager::cache_full_blocks(BlockTable& table, std::span<const TokenId> tokens,
                                     int64_t num_computed, uint64_t variant) {
  if (!prefix_caching_) return;
  const int64_t full = std::min<int64_t>(num_computed / block_size_, table.blocks.size());
  for (int64_t i = static_cast<int64_t>(table.hashes.size()); i < full; ++i) {
    const uint64_t parent = i == 0 ? root_hash(variant) : table.hashes[i - 1];
    auto block_tokens = tokens.subspan(i * block_size_, block_size_);
    const uint64_t h = block_hash(parent, block_tokens);
    table.hashes.push_back(h);
    // The same tokens computed by two sequences at once: the first registered copy is the one
    // found; the other stays private to its sequence.
    if (cached_.find(h) >= 0) continue;
    const int32_t block = table.blocks[i];
    Block& b = blocks_[block];
    b.hashed = true;
    b.hash = h;
    b.parent_hash = parent;
    std::copy(block_tokens.begin(), block_tokens.end(),
              block_tokens_.begin() + static_cast<ptrdiff_t>(block * block_size_));
    cached_.insert(h, block);
  }
}

void BlockManager::free(BlockTable& table) {
  // Last blocks first: a sequence's tail is the least likely to be shared, so it is evicted first.
  for (auto it = table.blocks.rbegin(); it != table.blocks.rend(); ++it) {
    Block& b = blocks_[*it];
    assert(b.refs > 0);
    if (--b.refs == 0) queue_push_back(*it);
  }
  table.blocks.clear();
  table.hashes.clear();
}

void BlockManager::evict(int32_t block) {
  Block& b = blocks_[block];
  if (!b.hashed) return;
  if (cached_.find(b.hash) == block) cached_.erase(b.hash);
  b.hashed = false;
}

void BlockManager::queue_push_back(int32_t block) {
  Block& b = blocks_[block];
  b.prev = tail_;
  b.next = -1;
  if (tail_ >= 0)
    blocks_[tail_].next = block;
  else
    head_ = block;
  tail_ = block;
  ++free_count_;
}

void BlockManager::queue_remove(int32_t block) {
  Block& b = blocks_[block];
  if (b.prev >= 0)
    blocks_[b.prev].next = b.next;
  else
    head_ = b.next;
  if (b.next >= 0)
    blocks_[b.next].prev = b.prev;
  else
    tail_ = b.prev;
  b.prev = b.next = -1;
  --free_count_;
}

int32_t BlockManager::queue_pop_front() {
  const int32_t b = head_;
  assert(b >= 0);
  queue_remove(b);
  return b;
}

}  // namespace dq4::engine
