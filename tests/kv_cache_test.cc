// The KV cache's storage: layout and prefaulting.

#include "dq4/model/kv_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>

#include "dq4/kernels/thread_pool.h"

namespace dq4 {
namespace {

// Resident bytes of this process (/proc/self/statm), 0 when unreadable.
size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t total = 0, resident = 0;
  if (!(statm >> total >> resident)) return 0;
  return resident * 4096;
}

KvCacheShape shape_of_mib(int64_t mib) {
  KvCacheShape s;
  s.layers = 4;
  s.kv_heads = 2;
  s.head_dim = 64;
  s.block_size = 16;
  // 4 layers x (K + V) x 2 heads x 16 tokens x 64 x 4 bytes = 64 KiB per block.
  s.blocks = mib * 16;
  return s;
}

TEST(KvCache, BlocksAreLaidOutPerLayerKeysThenValues) {
  KvCache cache(shape_of_mib(1));
  EXPECT_EQ(KvCache::bytes_per_block(cache.shape()), size_t{64} << 10);
  EXPECT_EQ(cache.block_stride(), 2 * 16 * 64);
  const auto* base = static_cast<const uint8_t*>(cache.keys(0));
  const size_t pool_bytes = static_cast<size_t>(16 * cache.block_stride()) * 4;
  EXPECT_EQ(static_cast<const uint8_t*>(cache.values(0)), base + pool_bytes);
  EXPECT_EQ(static_cast<const uint8_t*>(cache.keys(3)), base + 6 * pool_bytes);
  EXPECT_EQ(cache.bytes(), 8 * pool_bytes);
}

TEST(KvCache, PrefaultMapsTheWholePoolAndKeepsItZero) {
  ASSERT_GT(resident_bytes(), 0u) << "/proc/self/statm unreadable";
  KvCache cache(shape_of_mib(64));
  ThreadPool pool(3);
  const size_t before = resident_bytes();
  cache.prefault(pool);
  const size_t after = resident_bytes();
  EXPECT_GE(after, before + cache.bytes() - (size_t{2} << 20))
      << "prefault mapped " << (after - before) << " of " << cache.bytes() << " bytes";
  const auto* bytes = static_cast<const uint8_t*>(cache.keys(0));
  for (size_t i = 0; i < cache.bytes(); i += 4093) ASSERT_EQ(bytes[i], 0) << i;
}

}  // namespace
}  // namespace dq4
