// The KV cache's storage: one aligned allocation, per layer a key pool then a value pool.

#include "dq4/model/kv_cache.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <new>
#include <string>

#include "dq4/kernels/error.h"
#include "dq4/kernels/thread_pool.h"

namespace dq4 {
namespace {

// Memory the system can give without swapping: MemAvailable of /proc/meminfo (Linux), else all
// of the physical memory; 0 when unknown.
struct SystemMemory {
  uint64_t total = 0, available = 0;
};
SystemMemory system_memory() {
  SystemMemory m;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) m.total = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  m.available = m.total;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") m.available = kib * 1024;
    meminfo.ignore(256, '\n');
  }
  return m;
}

std::string gigabytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

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
  size_t bytes = 0;
  if (__builtin_mul_overflow(bytes_per_block(shape), static_cast<size_t>(shape.blocks), &bytes))
    throw Error("KV cache: " + std::to_string(shape.blocks) + " blocks are more than memory holds");
  // Every page is touched at once (prefault): a pool larger than the free memory would swap or
  // bring the out-of-memory killer, so it is refused here, with the numbers.
  const SystemMemory memory = system_memory();
  const std::string what = "KV cache: " + std::to_string(shape.blocks) + " blocks of " +
                           std::to_string(shape.block_size) + " tokens take " + gigabytes(bytes);
  if (memory.available != 0 && bytes > memory.available)
    throw Error(what + ", more than the " + gigabytes(memory.available) + " of memory available (" +
                gigabytes(memory.total) + " in all)");
  try {
    data_ = AlignedBuffer(bytes);
  } catch (const std::bad_alloc&) {
    throw Error(what + ": cannot allocate that much (" + gigabytes(memory.available) +
                " of memory available, " + gigabytes(memory.total) + " in all)");
  }
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
