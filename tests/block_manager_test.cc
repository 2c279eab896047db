// The KV block pool: allocation, reference counts, prefix-cache hits and LRU eviction.
#include "block_manager.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <random>
#include <vector>

namespace dq4::engine {
namespace {

std::vector<TokenId> iota_tokens(int n, TokenId first = 100) {
  std::vector<TokenId> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// The prefix cache's hash -> block table against a map: hashes that share their low bits pile
// up in runs that wrap around the table's end, and erasing from the middle of a run must leave
// every other entry findable.
TEST(BlockIndex, AgreesWithAMapThroughInsertsAndErases) {
  constexpr int kEntries = 48;
  BlockIndex index(kEntries);
  std::map<uint64_t, int32_t> want;
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20000; ++round) {
    // 6 low bits out of a table of 128 slots: clusters near the end wrap to the start.
    const uint64_t hash = (rng() << 8) | (120 + rng() % 6);
    const auto it = want.find(hash);
    if (it != want.end()) {
      index.erase(hash);
      want.erase(it);
    } else if (want.size() < kEntries) {
      const auto block = static_cast<int32_t>(rng() % 1000);
      index.insert(hash, block);
      want.emplace(hash, block);
    }
    if (round % 97 == 0 && !want.empty()) {  // erase one picked at random
      auto victim = std::next(want.begin(), static_cast<long>(rng() % want.size()));
      index.erase(victim->first);
      want.erase(victim);
    }
    for (const auto& [h, block] : want) ASSERT_EQ(index.find(h), block) << "round " << round;
    ASSERT_EQ(index.find((rng() << 8) | 126), -1);  // in a run, never a home: absent
  }
}

TEST(BlockManager, AllocatesWhatIsFreeAndGivesItBack) {
  BlockManager bm(8, 4, false);
  BlockTable a, b;
  ASSERT_TRUE(bm.allocate(a, 9));  // 3 blocks
  EXPECT_EQ(a.blocks.size(), 3u);
  EXPECT_EQ(bm.free_blocks(), 5);
  ASSERT_TRUE(bm.allocate(a, 12));  // still 3
  EXPECT_EQ(a.blocks.size(), 3u);
  ASSERT_TRUE(bm.allocate(a, 13));
  EXPECT_EQ(a.blocks.size(), 4u);
  EXPECT_FALSE(bm.allocate(b, 17));  // 5 > 4 free: nothing taken
  EXPECT_TRUE(b.blocks.empty());
  EXPECT_EQ(bm.free_blocks(), 4);
  ASSERT_TRUE(bm.allocate(b, 16));
  EXPECT_EQ(bm.free_blocks(), 0);
  for (int32_t block : a.blocks) EXPECT_EQ(bm.ref_count(block), 1);
  bm.free(a);
  bm.free(b);
  EXPECT_TRUE(a.blocks.empty());
  EXPECT_EQ(bm.free_blocks(), 8);
  EXPECT_EQ(bm.used_blocks(), 0);
}

TEST(BlockManager, SharesComputedFullBlocksOfACommonPrefix) {
  BlockManager bm(16, 4, true);
  const auto tokens = iota_tokens(10);
  BlockTable a;
  ASSERT_TRUE(bm.allocate(a, 10));
  EXPECT_TRUE(bm.find_prefix(tokens).blocks.empty());  // nothing computed yet
  bm.cache_full_blocks(a, tokens, 10);                 // blocks 0 and 1 are full
  EXPECT_EQ(a.hashes.size(), 2u);
  EXPECT_TRUE(bm.is_cached(a.blocks[0]));
  EXPECT_FALSE(bm.is_cached(a.blocks[2]));

  // Same first 9 tokens, different tail: two blocks found.
  auto other = iota_tokens(14);
  other[9] = 7;
  const PrefixHit hit = bm.find_prefix(other);
  ASSERT_EQ(hit.blocks.size(), 2u);
  EXPECT_EQ(hit.blocks[0], a.blocks[0]);
  EXPECT_EQ(hit.blocks[1], a.blocks[1]);
  BlockTable b;
  ASSERT_TRUE(bm.allocate(b, 14, hit));
  EXPECT_EQ(b.blocks.size(), 4u);
  EXPECT_EQ(bm.ref_count(a.blocks[0]), 2);
  EXPECT_EQ(bm.ref_count(a.blocks[1]), 2);
  EXPECT_EQ(bm.ref_count(b.blocks[2]), 1);
  EXPECT_EQ(bm.used_blocks(), 5);

  // A different first block shares nothing, even with an equal second block.
  auto shifted = tokens;
  shifted[0] = 1;
  EXPECT_TRUE(bm.find_prefix(shifted).blocks.empty());

  bm.free(a);
  EXPECT_EQ(bm.ref_count(b.blocks[0]), 1);
  EXPECT_EQ(bm.used_blocks(), 4);
  bm.free(b);
  EXPECT_EQ(bm.used_blocks(), 0);
  // Freed, but still findable.
  EXPECT_EQ(bm.find_prefix(tokens).blocks.size(), 2u);
}

TEST(BlockManager, LeavesTheLastTokenToCompute) {
  BlockManager bm(4, 4, true);
  const auto tokens = iota_tokens(8);
  BlockTable a;
  ASSERT_TRUE(bm.allocate(a, 8));
  bm.cache_full_blocks(a, tokens, 8);
  EXPECT_EQ(a.hashes.size(), 2u);
  // The whole prompt is cached, yet its last token's logits are needed: one block is found.
  EXPECT_EQ(bm.find_prefix(tokens).blocks.size(), 1u);
  EXPECT_EQ(bm.find_prefix(iota_tokens(9)).blocks.size(), 2u);
}

// Blocks computed under one variant (longrope's short or long factors) are found under it only.
TEST(BlockManager, FindsCachedBlocksUnderTheirVariantOnly) {
  BlockManager bm(8, 4, true);
  const auto tokens = iota_tokens(9);
  BlockTable a, b;
  ASSERT_TRUE(bm.allocate(a, 9));
  bm.cache_full_blocks(a, tokens, 9, 1);
  EXPECT_TRUE(bm.find_prefix(tokens).blocks.empty());
  EXPECT_EQ(bm.find_prefix(tokens, 1).blocks,
            std::vector<int32_t>(a.blocks.begin(), a.blocks.begin() + 2));
  ASSERT_TRUE(bm.allocate(b, 9));
  bm.cache_full_blocks(b, tokens, 9);
  EXPECT_EQ(bm.find_prefix(tokens).blocks,
            std::vector<int32_t>(b.blocks.begin(), b.blocks.begin() + 2));
  EXPECT_EQ(bm.find_prefix(tokens, 1).blocks.at(0), a.blocks[0]);
}

TEST(BlockManager, TakingAFreeCachedBlockCountsAgainstTheFreeOnes) {
  BlockManager bm(3, 4, true);
  const auto tokens = iota_tokens(8);
  BlockTable a;
  ASSERT_TRUE(bm.allocate(a, 8));
  bm.cache_full_blocks(a, tokens, 8);
  bm.free(a);
  EXPECT_EQ(bm.free_blocks(), 3);
  const auto longer = iota_tokens(13);
  const PrefixHit hit = bm.find_prefix(longer);
  ASSERT_EQ(hit.blocks.size(), 2u);
  BlockTable b;
  // 13 tokens = 4 blocks: 2 hits + 2 fresh, but only 1 other block is free.
  EXPECT_FALSE(bm.allocate(b, 13, hit));
  EXPECT_EQ(bm.free_blocks(), 3);
  ASSERT_TRUE(bm.allocate(b, 12, hit));
  EXPECT_EQ(bm.free_blocks(), 0);
  EXPECT_EQ(b.blocks[0], hit.blocks[0]);
}

TEST(BlockManager, EvictsTheLeastRecentlyFreedFirst) {
  BlockManager bm(4, 2, true);
  const auto old_tokens = iota_tokens(4, 10);
  const auto new_tokens = iota_tokens(4, 20);
  BlockTable a, b;
  ASSERT_TRUE(bm.allocate(a, 4));
  bm.cache_full_blocks(a, old_tokens, 4);
  ASSERT_TRUE(bm.allocate(b, 4));
  bm.cache_full_blocks(b, new_tokens, 4);
  bm.free(a);  // freed first: evicted first, its tail block before its head
  bm.free(b);
  const int32_t a_head = bm.find_prefix(iota_tokens(5, 10)).blocks.at(0);
  BlockTable c;
  ASSERT_TRUE(bm.allocate(c, 2));  // takes a's tail block
  EXPECT_EQ(bm.find_prefix(iota_tokens(5, 10)).blocks.size(), 1u);
  ASSERT_TRUE(bm.allocate(c, 4));  // then a's head block
  EXPECT_EQ(c.blocks[1], a_head);
  EXPECT_TRUE(bm.find_prefix(iota_tokens(5, 10)).blocks.empty());
  EXPECT_EQ(bm.find_prefix(iota_tokens(5, 20)).blocks.size(), 2u);  // b untouched

  // A hit refreshes a block: b's blocks leave the free queue while held, go to its back after.
  BlockTable d;
  ASSERT_TRUE(bm.allocate(d, 4, bm.find_prefix(iota_tokens(5, 20))));
  EXPECT_EQ(bm.free_blocks(), 0);
  bm.free(d);
  bm.free(c);  // c's blocks now are the most recently freed
  BlockTable e;
  ASSERT_TRUE(bm.allocate(e, 4));
  EXPECT_TRUE(bm.find_prefix(iota_tokens(5, 20)).blocks.empty());
}

TEST(BlockManager, WithoutPrefixCachingFindsNothing) {
  BlockManager bm(4, 2, false);
  const auto tokens = iota_tokens(6);
  BlockTable a;
  ASSERT_TRUE(bm.allocate(a, 6));
  bm.cache_full_blocks(a, tokens, 6);
  EXPECT_TRUE(bm.find_prefix(tokens).blocks.empty());
  EXPECT_FALSE(bm.is_cached(a.blocks[0]));
}

TEST(BlockManager, AMatchNeedsTheWholePrefix) {
  // An equal second block under a different first block holds different keys and values.
  BlockManager bm(8, 2, true);
  BlockTable a;
  const std::vector<TokenId> first = {1, 2, 3, 4, 5};
  ASSERT_TRUE(bm.allocate(a, 4));
  bm.cache_full_blocks(a, first, 4);
  const std::vector<TokenId> second = {9, 9, 3, 4, 5};
  EXPECT_TRUE(bm.find_prefix(second).blocks.empty());
  EXPECT_NE(block_hash(kRootHash, std::vector<TokenId>{1, 2}),
            block_hash(kRootHash, std::vector<TokenId>{2, 1}));
}

}  // namespace
}  // namespace dq4::engine
