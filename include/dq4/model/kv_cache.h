#pragma once
// The KV cache: one pool of fixed-size blocks for every layer's keys and values, shared by all
// sequences. A sequence owns a list of blocks (its block table); which blocks are free, shared or
// evicted is decided above (engine), never here. Block b of layer l holds
// [num_kv_heads][block_size][head_dim] keys, and the same for values (dq4/attention.h's PagedKv).

#include <cstddef>
#include <cstdint>

#include "dq4/kernels/aligned_buffer.h"
#include "dq4/kernels/attention.h"

namespace dq4 {

class ThreadPool;

struct KvCacheShape {
  int64_t layers = 0, kv_heads = 0, head_dim = 0;
  int64_t block_size = 16;  // tokens per block
  int64_t blocks = 0;
  attention::KvType type = attention::KvType::f32;
};

class KvCache {
 public:
  KvCache() = default;
  // Throws dq4::Error for non-positive sizes.
  explicit KvCache(const KvCacheShape& shape);

  const KvCacheShape& shape() const { return shape_; }
  int64_t block_size() const { return shape_.block_size; }
  int64_t blocks() const { return shape_.blocks; }
  size_t bytes() const { return data_.size(); }
  // Bytes one block takes over all layers, keys and values: to size a pool from a memory budget.
  static size_t bytes_per_block(const KvCacheShape& shape);

  // Elements from one block to the next within one layer's keys (or values).
  int64_t block_stride() const { return shape_.kv_heads * shape_.block_size * shape_.head_dim; }
  void* keys(int64_t layer);    // layer's key pool: blocks * block_stride() elements
  void* values(int64_t layer);  // layer's value pool
  const void* keys(int64_t layer) const;
  const void* values(int64_t layer) const;

  // Maps every page of the pool in now, on `pool`'s threads, rather than on first use: a fresh
  // block's first write faults in (and zeroes) a page on the step that writes it, which is
  // costly on a virtualized host. A server sizes its pool once and keeps it, so it pays this at
  // startup.
  void prefault(ThreadPool& pool);

 private:
  KvCacheShape shape_;
  AlignedBuffer data_;
};

}  // namespace dq4
