#pragma once
// The descriptor every attention variant fills in (one per ISA file), and what they share: the
// checked problem, the tile a call computes, where a key lives in the paged cache and the
// layout of the scratch the driver hands each call. Kernels never allocate or start threads.

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "dq4/kernels/attention.h"
#include "dq4/kernels/cpu_features.h"

#define DQ4_ATTENTION_INLINE inline __attribute__((always_inline))

namespace dq4::attention {

// Args after run()'s checks, without the threading fields.
struct Problem {
  const float* q;
  int64_t ldq;
  float* out;
  int64_t ldo;
  int64_t tokens, first_position, num_heads, num_kv_heads, head_dim, window;
  float scale;
  PagedKv kv;
  float softcap;

  int64_t group() const { return num_heads / num_kv_heads; }
  // The keys query row i attends to: [key_begin(i), key_end(i)).
  int64_t key_begin(int64_t i) const {
    const int64_t p = first_position + i;
    return window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
  }
  int64_t key_end(int64_t i) const { return first_position + i + 1; }
};

// What one call computes: heads [head_begin, head_end) (all of kv head kv_head's group) for the
// query rows [row_begin, row_end).
struct Tile {
  int64_t kv_head, head_begin, head_end, row_begin, row_end;
};

// Rows a kernel handles at once (their scores and outputs live in scratch together). A pass
// brings each key and value from L2 once for all of its rows, so a prompt's passes read the cache
// less often the more rows each takes.
constexpr int64_t kRowsPerPass = 8;
// Padding of each score row, so that 16-lane loads past its end stay inside scratch.
constexpr int64_t kScorePad = 16;

// Keys whose dot products a kernel computes at once, at most.
constexpr int64_t kMaxKeysAtOnce = 16;
// Keys per block of the weighted-value sweep, so that a block's values stay in L1 while each
// (row, head) of a pass reads them.
constexpr int64_t kValueBlock = 32;

// Floats of one key or value vector staged as f32 in scratch: head_dim padded to whole 16-lane
// vectors.
DQ4_ATTENTION_INLINE int64_t staged_vector_floats(int64_t head_dim) {
  return (head_dim + 15) / 16 * 16;
}

// Floats of scratch a call needs for `tile`: per (row of a pass, head) a score row spanning the
// keys of any pass of the tile, an f32 output accumulator of head_dim and a sum; then, 64-byte
// aligned, the keys of one batch of dot products and the values of one block as f32.
DQ4_ATTENTION_INLINE int64_t scratch_floats(const Problem& p, const Tile& t) {
  const int64_t rows = std::min(kRowsPerPass, t.row_end - t.row_begin);
  const int64_t span = p.key_end(t.row_end - 1) - p.key_begin(t.row_begin);
  return rows * (t.head_end - t.head_begin) * (span + kScorePad + p.head_dim + 1) + 16 +
         (kMaxKeysAtOnce + kValueBlock) * staged_vector_floats(p.head_dim);
}

// Element offset of token j's key (or value) vector of kv head g in the paged cache.
DQ4_ATTENTION_INLINE int64_t kv_offset(const PagedKv& kv, int64_t head_dim, int64_t g, int64_t j) {
  const int64_t block = kv.block_table[j / kv.block_size];
  return block * kv.block_stride + (g * kv.block_size + j % kv.block_size) * head_dim;
}

// A bf16 value widened exactly to f32.
DQ4_ATTENTION_INLINE float widen_bf16(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

struct Kernel {
  const char* name;     // what DQ4_ISA calls it: the ISA
  const char* variant;  // what it computes: types, ISA, tiles (family.h)
  const char* needs;    // the CPU features it needs, for error messages
  bool (*supported)(const CpuFeatures&);
  // Computes `tile` of `problem` into problem.out, using scratch_floats() floats of `scratch`
  // (64-byte aligned).
  void (*run)(const Problem& problem, const Tile& tile, float* scratch);
  // Set for a variant tuned for some cores: chosen automatically only where it returns true.
  bool (*preferred)(const CpuFeatures&) = nullptr;
};

}  // namespace dq4::attention
