// The KV cache's storage: one aligned allocation, per layer a key pool then a value pool.

#include "dq4/model/kv_cache.h"

#include <string>

#include "dq4/kernels/error.h"
#include "dq4/kernels/thread_pool.h"

namespace dq4 {
namespace {

size_t element_bytes(attention::KvType type) { return type == attention::KvType::f32 ? 4 : 2; }

size_t pool_bytes(const KvCacheShape& s) {
  return static_cast<size_t>(s.blocks * s.kv_heads * s.block_size * s.head_dim) *
         element_bytes(s.type);
}

}  // namespace

KvCache::KvCache(const KvCacheShape& shape) : shape_(shape) {
  if (shape.layers <= 0 || shape.kv_heads <= 0 || shape.head_dim <= 0 || shape.block_size <= 0 ||
      shape.blocks <= 0)
    throw Error("KV cache: layers, kv_heads, head_dim, block_size and blocks must be positive");
  data_ = AlignedBuffer(bytes_per_block(shape) * static_cast<size_t>(shape.blocks));
}

void KvCache::prefault(ThreadPool& pool) {
  constexpr size_t kPage = 4096;  // the smallest page: a huge page is faulted in by its first
  const size_t pages = (data_.size() + kPage - 1) / kPage;
  const int64_t parts = pool.size();
  volatile uint8_t* base = data_.data();
  pool.run(parts, [&](int64_t t) {
    const size_t end = pages * static_cast<size_t>(t + 1) / static_cast<size_t>(parts);
    for (size_t p = pages * static_cast<size_t>(t) / static_cast<size_t>(parts); p < end; ++p)
      base[p * kPage] = 0;  // the pool is fresh and all zero: this only maps the page
  });
}

size_t KvCache::bytes_per_block(const KvCacheShape& s) {
  return static_cast<size_t>(2 * s.layers * s.kv_heads * s.block_size * s.head_dim) *
         element_bytes(s.type);
}

void* KvCache::keys(int64_t layer) {
  return data_.data() + static_cast<size_t>(2 * layer) * pool_bytes(shape_);
}
void* KvCache::values(int64_t layer) {
  return data_.data() + static_cast<size_t>(2 * layer + 1) * pool_bytes(shape_);
}
const void* KvCache::keys(int64_t layer) const { return const_cast<KvCache*>(this)->keys(layer); }
const void* KvCache::values(int64_t layer) const {
  return const_cast<KvCache*>(this)->values(layer);
}

}  // namespace dq4
