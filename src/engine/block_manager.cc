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

uint64_t block_hash(uint64_t parent_hash, std::span<const TokenId> tokens) {
  uint64_t h = mix(parent_hash ^ tokens.size());
  for (TokenId t : tokens) h = mix(h ^ static_cast<uint32_t>(t)) + 0x9e3779b97f4a7c15ull;
  return h;
}

BlockManager::BlockManager(int64_t num_blocks, int64_t block_size, bool prefix_caching)
    : block_size_(block_size), prefix_caching_(prefix_caching) {
  if (num_blocks <= 0 || num_blocks > INT32_MAX)
    throw Error("BlockManager: block count " + std::to_string(num_blocks) + " out of range");
  if (block_size <= 0)
    throw Error("BlockManager: block size " + std::to_string(block_size) + " must be positive");
  blocks_.resize(num_blocks);
  for (int32_t b = 0; b < num_blocks; ++b) queue_push_back(b);
}

bool BlockManager::is_cached(int32_t block) const {
  const Block& b = blocks_[block];
  if (!b.hashed) return false;
  auto it = cached_.find(b.hash);
  return it != cached_.end() && it->second == block;
}

int32_t BlockManager::lookup(uint64_t parent_hash, uint64_t hash,
                             std::span<const TokenId> tokens) const {
  auto it = cached_.find(hash);
  if (it == cached_.end()) return -1;
  const Block& b = blocks_[it->second];
  // A hash collision must never hand out somebody else's keys and values.
  if (b.parent_hash != parent_hash ||
      !std::equal(tokens.begin(), tokens.end(), b.tokens.begin(), b.tokens.end()))
    return -1;
  return it->second;
}

PrefixHit BlockManager::find_prefix(std::span<const TokenId> tokens) const {
  PrefixHit hit;
  if (!prefix_caching_ || tokens.empty()) return hit;
  const int64_t full = static_cast<int64_t>(tokens.size() - 1) / block_size_;
  uint64_t parent = kRootHash;
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
                                     int64_t num_computed) {
  if (!prefix_caching_) return;
  const int64_t full = std::min<int64_t>(num_computed / block_size_, table.blocks.size());
  for (int64_t i = static_cast<int64_t>(table.hashes.size()); i < full; ++i) {
    const uint64_t parent = i == 0 ? kRootHash : table.hashes[i - 1];
    auto block_tokens = tokens.subspan(i * block_size_, block_size_);
    const uint64_t h = block_hash(parent, block_tokens);
    table.hashes.push_back(h);
    // The same tokens computed by two sequences at once: the first registered copy is the one
    // found; the other stays private to its sequence.
    if (cached_.count(h)) continue;
    Block& b = blocks_[table.blocks[i]];
    b.hashed = true;
    b.hash = h;
    b.parent_hash = parent;
    b.tokens.assign(block_tokens.begin(), block_tokens.end());
    cached_.emplace(h, table.blocks[i]);
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
  auto it = cached_.find(b.hash);
  if (it != cached_.end() && it->second == block) cached_.erase(it);
  b.hashed = false;
  b.tokens.clear();
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
