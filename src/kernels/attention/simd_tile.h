#pragma once
// The tile computation every SIMD attention variant shares, written once over a 16-lane vector
// type V (the 16 lanes of attention.h's sums: one zmm, two ymm or four NEON q registers); each
// ISA translation unit instantiates it with its own target flags (everything here has internal
// linkage, so one ISA's copy can never be linked into another's).
//
// V provides: F (16 floats), kKeys (keys whose dot products run at once), kValueHeads (heads
//   whose weighted values accumulate at once: 4 kValueHeads F accumulators), zero(), set1(float),
//   load(const float*), load(const uint16_t*) (16 bf16 widened), store(float*, F), fma(a, b, c)
//   = a*b + c rounded once, add, sub, mul, max (either operand when equal; inputs are never
//   NaN), round (to the nearest integer, ties to even), pow2(n) (2^n from an integral n in
//   [-126, 0] through the exponent bits), zero_below(x, limit, y) = x < limit ? 0 : y, and
//   reduce_keys(acc, scale, out): out[b] = reduce16(lanes of acc[b]) * scale for b < kKeys
//   (<= kScorePad), by the same tree, and kPrefetchLocality (__builtin_prefetch's: 3 fetches
//   the keys and values ahead into L1, 2 into L2).
//
// A tile is processed kRowsPerPass query rows at a time, all its heads together, in three
// sweeps per pass: scores for every (row, head), soft-capped when asked (the scalar soft_cap()),
// over the keys any row of the pass sees (each key loaded once for all of them), softmax weights
// per (row, head), then the weighted values (each value loaded once per block of keys, the outputs
// accumulating in scratch between blocks).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "attention_math.h"
#include "kernel.h"

namespace dq4::attention {
namespace {

// Score sweep: how far ahead keys are prefetched.
constexpr int64_t kPrefetchKeys = 16;
// Score sweep: F32 keys are read in place, not staged, by passes of at most this many
// (row, head)s (a decode step's one row with a kv group of up to 4 heads), and by the rows of a
// multi-head prompt's pass.
constexpr int64_t kInPlaceReaders = 4;

// Up to 16 elements from p (the rest 0) as f32: the tail of a head_dim that is no multiple of 16.
template <class V, class T>
DQ4_ATTENTION_INLINE typename V::F load_part(const T* p, int64_t n) {
  T part[16] = {};
  std::memcpy(part, p, static_cast<size_t>(n) * sizeof(T));
  return V::load(part);
}

template <class V>
DQ4_ATTENTION_INLINE void store_part(float* p, typename V::F v, int64_t n) {
  float part[16];
  V::store(part, v);
  std::memcpy(p, part, static_cast<size_t>(n) * sizeof(float));
}

template <class V>
DQ4_ATTENTION_INLINE typename V::F exp_approx(typename V::F x) {
  using F = typename V::F;
  const F c = V::max(x, V::set1(kExpMin));
  const F n = V::round(V::mul(c, V::set1(kLog2e)));
  F r = V::fma(n, V::set1(-kLn2Hi), c);
  r = V::fma(n, V::set1(-kLn2Lo), r);
  F y = V::set1(kExpPoly[0]);
#pragma GCC unroll 8
  for (int i = 1; i < 8; ++i) y = V::fma(y, r, V::set1(kExpPoly[i]));
  return V::zero_below(x, V::set1(kExpMin), V::mul(y, V::pow2(n)));
}

// Where the vectors of consecutive tokens of one kv head lie, stepping through the block table
// without a division or a multiplication per token: the block's address is looked up when the
// cursor first reads in it.
template <class T>
struct TokenCursor {
  const T* base;
  const PagedKv* kv;
  int64_t head_offset, head_dim, block, slot;
  const T* block_start = nullptr;  // null until read in this block

  TokenCursor(const T* base, const PagedKv& kv, int64_t head_dim, int64_t g, int64_t j)
      : base(base),
        kv(&kv),
        head_offset(g * kv.block_size * head_dim),
        head_dim(head_dim),
        block(j / kv.block_size),
        slot(j % kv.block_size) {}
  const T* get() {
    if (block_start == nullptr)
      block_start = base + kv->block_table[block] * kv->block_stride + head_offset;
    return block_start + slot * head_dim;
  }
  void next() {
    if (++slot == kv->block_size) {
      slot = 0;
      ++block;
      block_start = nullptr;
    }
  }
};

// Software prefetch of the vectors `distance` tokens ahead of a sweep over [.., end): the
// hardware prefetchers follow one block's vectors, not the jump to the next block of the table.
// Tokens before `cold` (swept by the tile's previous pass, so still cached) are skipped: a
// prefetch of a cached line still takes a fill buffer and costs prefill more than it saves.
// kLocality: where the lines go (V::kPrefetchLocality).
template <class T, int kLocality>
struct Prefetcher {
  TokenCursor<T> cursor;
  int64_t at, end, bytes;

  Prefetcher(const T* base, const PagedKv& kv, int64_t head_dim, int64_t g, int64_t from,
             int64_t distance, int64_t cold, int64_t end)
      : cursor(base, kv, head_dim, g, std::min(std::max(from + distance, cold), end)),
        at(std::min(std::max(from + distance, cold), end)),
        end(end),
        bytes(head_dim * static_cast<int64_t>(sizeof(T))) {}
  // Prefetches the next token's vector.
  void step() {
    if (at == end) return;
    const char* v = reinterpret_cast<const char*>(cursor.get());
    for (int64_t offset = 0; offset < bytes; offset += 64)
      __builtin_prefetch(v + offset, 0, kLocality);
    cursor.next();
    ++at;
  }
};

// The scratch of one pass (kernel.h's scratch_floats()): per (row r, head h) a score row over
// keys [first, end), an output accumulator and the sum of the weights.
struct PassScratch {
  float* scores;
  float* out;
  float* sums;
  float* keys;    // a batch of keys as f32, chunk-major (stage_keys)
  float* values;  // a block of values as f32 (BF16 caches only), one vector after another
  int64_t score_stride, head_dim, heads;

  float* score_row(int64_t r, int64_t h) const { return scores + (r * heads + h) * score_stride; }
  float* out_row(int64_t r, int64_t h) const { return out + (r * heads + h) * head_dim; }
  float* sum(int64_t r, int64_t h) const { return sums + r * heads + h; }
};

// One key or value vector as f32 at `staged` (staged_vector_floats), a partial last chunk
// zero-filled.
template <class V, class T>
DQ4_ATTENTION_INLINE void stage_vector(const T* v, int64_t head_dim, float* staged) {
  const int64_t full = head_dim / 16, tail = head_dim % 16;
  for (int64_t c = 0; c < full; ++c) V::store(staged + 16 * c, V::load(v + 16 * c));
  if (tail != 0) V::store(staged + 16 * full, load_part<V>(v + 16 * full, tail));
}

// V::kKeys keys (key(b): key b's vector) as f32 at `staged`, chunk-major (16 lanes of every key,
// then the next 16), a partial last chunk zero-filled: every (row, head) of a pass reads them
// with one base pointer and, for BF16 caches, without widening them again.
template <class V, class T, class Key>
DQ4_ATTENTION_INLINE void stage_keys(Key&& key, int64_t head_dim, float* staged) {
  const int64_t full = head_dim / 16, tail = head_dim % 16;
  for (int64_t c = 0; c < full; ++c, staged += 16 * V::kKeys)
#pragma GCC unroll 16
    for (int b = 0; b < V::kKeys; ++b) V::store(staged + 16 * b, V::load(key(b) + 16 * c));
  if (tail != 0)
#pragma GCC unroll 16
    for (int b = 0; b < V::kKeys; ++b)
      V::store(staged + 16 * b, load_part<V>(key(b) + 16 * full, tail));
}

// The scores of one batch of V::kKeys keys for every (row, head) of the pass, from column
// `column` of their score rows. kStaged: the keys as stage_keys() lays them out at `keys` (K is
// float); else the cache's keys in place, key b at keys + b * head_dim (a batch within one cache
// block), BF16 widened as loaded. kHeadDim > 0: p.head_dim, known at compile time, so that the
// in-place keys' chunks are constant offsets from `keys` (with a run-time stride every key
// needs an index register, more than x86-64 has free for 16 keys).
template <class V, bool kStaged, int kHeadDim = 0, class K>
DQ4_ATTENTION_INLINE void batch_scores(const Problem& p, const Tile& t, int64_t r0, int64_t rows,
                                       const K* keys, int64_t column, const PassScratch& s) {
  using F = typename V::F;
  constexpr int kKeys = V::kKeys;
  const int64_t head_dim = kHeadDim > 0 ? kHeadDim : p.head_dim;
  const int64_t heads = t.head_end - t.head_begin, full = head_dim / 16, tail = head_dim % 16;
  // Chunk c of key b.
  const auto chunk = [&](int b, int64_t c) {
    return kStaged ? keys + 16 * kKeys * c + 16 * b : keys + b * head_dim + 16 * c;
  };
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      const float* q = p.q + (r0 + r) * p.ldq + (t.head_begin + h) * p.head_dim;
      F acc[kKeys];
#pragma GCC unroll 16
      for (int b = 0; b < kKeys; ++b) acc[b] = V::zero();
      for (int64_t c = 0; c < full; ++c) {
        const F qv = V::load(q + 16 * c);
#pragma GCC unroll 16
        for (int b = 0; b < kKeys; ++b) acc[b] = V::fma(qv, V::load(chunk(b, c)), acc[b]);
      }
      if (tail != 0) {  // both operands zero past the tail
        const F qv = load_part<V>(q + 16 * full, tail);
#pragma GCC unroll 16
        for (int b = 0; b < kKeys; ++b)
          acc[b] = V::fma(
              qv, kStaged ? V::load(chunk(b, full)) : load_part<V>(chunk(b, full), tail), acc[b]);
      }
      // A last batch writes kKeys - count unused scores into the row's padding.
      V::reduce_keys(acc, p.scale, s.score_row(r, h) + column);
    }
}

// Scores s_j = dot(q, k_j) * scale of every (row, head) of the pass, keys [first, end). A batch
// of keys within one cache block is read in place when the pass has few (row, head)s to read it
// (a decode step's), for whom staging it costs more than it saves: F32 keys for up to
// kInPlaceReaders, BF16 keys (widened again by every reader) for one.
template <class V, class T>
void score_sweep(const Problem& p, const Tile& t, int64_t r0, int64_t rows, int64_t first,
                 int64_t cold, int64_t end, const PassScratch& s) {
  constexpr int kKeys = V::kKeys;
  static_assert(kKeys <= kMaxKeysAtOnce && kKeys <= kScorePad);
  const T* keys = static_cast<const T*>(p.kv.keys);
  TokenCursor<T> cursor(keys, p.kv, p.head_dim, t.kv_head, first);
  Prefetcher<T, V::kPrefetchLocality> ahead(keys, p.kv, p.head_dim, t.kv_head, first, kPrefetchKeys,
                                            cold, end);
  const int64_t heads = t.head_end - t.head_begin;
  const bool few_readers =
      std::is_same_v<T, float> ? rows * heads <= kInPlaceReaders || heads == 1 : rows * heads == 1;
  for (int64_t j = first; j < end; j += kKeys) {
    const int64_t count = std::min<int64_t>(kKeys, end - j);
    // A batch within one cache block is one vector after another from its first key (past the
    // end of the keys it reads on within the block); another repeats its last key to fill up.
    // Those dots are not used.
    const bool in_block = cursor.slot + kKeys <= p.kv.block_size;
    const T* key[kKeys];
    const T* const first_key = cursor.get();
    for (int b = 0; b < kKeys; ++b) {
      if (!in_block) key[b] = cursor.get();
      if (b + 1 < count) cursor.next();
      ahead.step();
    }
    cursor.next();
    if (in_block && few_readers) {
      if (p.head_dim == 64)
        batch_scores<V, false, 64>(p, t, r0, rows, first_key, j - first, s);
      else if (p.head_dim == 128)
        batch_scores<V, false, 128>(p, t, r0, rows, first_key, j - first, s);
      else
        batch_scores<V, false>(p, t, r0, rows, first_key, j - first, s);
      continue;
    }
    if (in_block)
      stage_keys<V, T>([&](int b) { return first_key + b * p.head_dim; }, p.head_dim, s.keys);
    else
      stage_keys<V, T>([&](int b) { return key[b]; }, p.head_dim, s.keys);
    batch_scores<V, true>(p, t, r0, rows, s.keys, j - first, s);
  }
}

// The weights e_j = exp_approx(s_j - m) of n scores at e (in place); returns their sum.
template <class V>
float softmax_weights(float* e, int64_t n) {
  using F = typename V::F;
  float m = e[0];
  if (n >= 16) {
    F mv = V::load(e);
    for (int64_t i = 16; i + 16 <= n; i += 16) mv = V::max(mv, V::load(e + i));
    mv = V::max(mv, V::load(e + n - 16));  // the last lanes again: max is idempotent
    float lanes[16];
    V::store(lanes, mv);
    for (float l : lanes) m = l > m ? l : m;
  } else {
    for (int64_t i = 1; i < n; ++i) m = e[i] > m ? e[i] : m;
  }
  const F mv = V::set1(m);
  F sum = V::zero();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const F w = exp_approx<V>(V::sub(V::load(e + i), mv));
    V::store(e + i, w);
    sum = V::add(sum, w);
  }
  if (i < n) {  // the last lanes add exact zeros
    float part[16] = {};
    std::memcpy(part, e + i, static_cast<size_t>(n - i) * sizeof(float));
    V::store(part, exp_approx<V>(V::sub(V::load(part), mv)));
    for (int64_t l = n - i; l < 16; ++l) part[l] = 0.0f;
    std::memcpy(e + i, part, static_cast<size_t>(n - i) * sizeof(float));
    sum = V::add(sum, V::load(part));
  }
  float lanes[16];
  V::store(lanes, sum);
  return reduce16(lanes);
}

// o[n] += sum over k in [k0, k1) of e[n][k] value[k], for the output accumulators of NH heads
// of one row (each value vector loaded once for all of them); S: f32, or BF16 widened as loaded.
template <class V, int NH, class S>
DQ4_ATTENTION_INLINE void accumulate_values(const Problem& p, const S* const* value,
                                            const float* const* e, int64_t k0, int64_t k1,
                                            float* const* o) {
  using F = typename V::F;
  constexpr int kVectors = 4;  // 64 dimensions per sweep
  const int64_t full = p.head_dim / 16, tail = p.head_dim % 16;
  int64_t c = 0;
  for (; c + kVectors <= full; c += kVectors) {
    F acc[NH][kVectors];
#pragma GCC unroll 4
    for (int n = 0; n < NH; ++n)
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) acc[n][v] = V::load(o[n] + 16 * (c + v));
    for (int64_t j = k0; j < k1; ++j) {
      F x[kVectors];
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) x[v] = V::load(value[j] + 16 * (c + v));
#pragma GCC unroll 4
      for (int n = 0; n < NH; ++n) {
        const F w = V::set1(e[n][j]);
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v) acc[n][v] = V::fma(w, x[v], acc[n][v]);
      }
    }
#pragma GCC unroll 4
    for (int n = 0; n < NH; ++n)
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) V::store(o[n] + 16 * (c + v), acc[n][v]);
  }
  for (int n = 0; n < NH; ++n) {
    for (int64_t d = c; d < full; ++d) {
      F acc = V::load(o[n] + 16 * d);
      for (int64_t j = k0; j < k1; ++j)
        acc = V::fma(V::set1(e[n][j]), V::load(value[j] + 16 * d), acc);
      V::store(o[n] + 16 * d, acc);
    }
    if (tail != 0) {
      F acc = load_part<V>(o[n] + 16 * full, tail);
      for (int64_t j = k0; j < k1; ++j)
        acc = V::fma(V::set1(e[n][j]), load_part<V>(value[j] + 16 * full, tail), acc);
      store_part<V>(o[n] + 16 * full, acc, tail);
    }
  }
}

// The weighted values of the pass's (row, head)s over keys [first, end), a block of kValueBlock
// keys at a time, into their output accumulators; S: what accumulate_values reads, the cache's
// own vectors (T) or f32 copies staged once per block for every (row, head).
template <class V, class T, class S>
void value_sweep(const Problem& p, const Tile& t, int64_t r0, int64_t rows, int64_t first,
                 int64_t cold, int64_t end, const PassScratch& s) {
  const int64_t heads = t.head_end - t.head_begin;
  const T* values = static_cast<const T*>(p.kv.values);
  TokenCursor<T> cursor(values, p.kv, p.head_dim, t.kv_head, first);
  Prefetcher<T, V::kPrefetchLocality> ahead(values, p.kv, p.head_dim, t.kv_head, first, kValueBlock,
                                            cold, end);
  const S* block_values[kValueBlock];
  const int64_t staged_floats = staged_vector_floats(p.head_dim);
  for (int64_t j0 = first; j0 < end; j0 += kValueBlock) {
    const int64_t j1 = std::min(end, j0 + kValueBlock);
    for (int64_t j = j0; j < j1; ++j, cursor.next()) {
      if constexpr (std::is_same_v<S, T>) {
        block_values[j - j0] = cursor.get();
      } else {  // widened once for every row and head of the pass
        float* staged = s.values + (j - j0) * staged_floats;
        stage_vector<V>(cursor.get(), p.head_dim, staged);
        block_values[j - j0] = staged;
      }
      ahead.step();  // the next block's values
    }
    if (heads >= V::kValueHeads) {
      // The heads of a row, kValueHeads at a time, share each value load.
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t lo = std::max(j0, p.key_begin(r0 + r)), hi = std::min(j1, p.key_end(r0 + r));
        if (lo >= hi) continue;
        for (int64_t h = 0; h < heads;) {
          const int n = heads - h >= V::kValueHeads ? V::kValueHeads : 1;
          const float* e[V::kValueHeads];
          float* o[V::kValueHeads];
          for (int i = 0; i < n; ++i) {
            e[i] = s.score_row(r, h + i) + (j0 - first);
            o[i] = s.out_row(r, h + i);
          }
          if (n == V::kValueHeads)
            accumulate_values<V, V::kValueHeads, S>(p, block_values, e, lo - j0, hi - j0, o);
          else
            accumulate_values<V, 1, S>(p, block_values, e, lo - j0, hi - j0, o);
          h += n;
        }
      }
      continue;
    }
    // Fewer heads than kValueHeads (multi-head attention): the rows of a head, kValueHeads at a
    // time, share each value load. Each row's keys stay in key order: those before the keys all
    // of them see, those, then the keys after them (the causal edge or a window gives some rows
    // keys the others do not see).
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = 0; r < rows; r += V::kValueHeads) {
        const int n = static_cast<int>(std::min<int64_t>(V::kValueHeads, rows - r));
        const float* e[V::kValueHeads];
        float* o[V::kValueHeads];
        int64_t lo[V::kValueHeads], hi[V::kValueHeads];
        int64_t k0 = 0, k1 = j1 - j0;  // the keys all of them see
        for (int i = 0; i < n; ++i) {
          e[i] = s.score_row(r + i, h) + (j0 - first);
          o[i] = s.out_row(r + i, h);
          lo[i] = std::max(j0, p.key_begin(r0 + r + i)) - j0;
          hi[i] = std::min(j1, p.key_end(r0 + r + i)) - j0;
          k0 = std::max(k0, lo[i]);
          k1 = std::min(k1, hi[i]);
        }
        if (n < V::kValueHeads || k0 >= k1) k0 = k1 = 0;  // each row alone
        for (int i = 0; i < n; ++i) {
          const int64_t before = std::min(k0, hi[i]);
          if (lo[i] < before)
            accumulate_values<V, 1, S>(p, block_values, &e[i], lo[i], before, &o[i]);
        }
        if (k0 < k1) accumulate_values<V, V::kValueHeads, S>(p, block_values, e, k0, k1, o);
        for (int i = 0; i < n; ++i) {
          const int64_t after = std::max(k1, lo[i]);
          if (after < hi[i])
            accumulate_values<V, 1, S>(p, block_values, &e[i], after, hi[i], &o[i]);
        }
      }
  }
}

// One pass of rows [r0, r0 + rows); keys before `cold` were swept by the previous pass.
template <class V, class T>
void pass(const Problem& p, const Tile& t, int64_t r0, int64_t rows, int64_t cold,
          const PassScratch& s) {
  const int64_t heads = t.head_end - t.head_begin;
  const int64_t first = p.key_begin(r0), end = p.key_end(r0 + rows - 1);
  score_sweep<V, T>(p, t, r0, rows, first, cold, end, s);

  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t lo = p.key_begin(r0 + r), hi = p.key_end(r0 + r);
      float* scores = s.score_row(r, h) + (lo - first);
      if (p.softcap > 0)
        for (int64_t j = 0; j < hi - lo; ++j) scores[j] = soft_cap(scores[j], p.softcap);
      *s.sum(r, h) = softmax_weights<V>(scores, hi - lo);
      std::fill(s.out_row(r, h), s.out_row(r, h) + p.head_dim, 0.0f);
    }

  // F32 values are read in place. Each BF16 value vector is widened once: as the sweep loads it
  // when one accumulate call reads it (kValueHeads (row, head)s or one), else into scratch for
  // all the calls that read it.
  const int64_t calls = heads >= V::kValueHeads
                            ? rows * (heads / V::kValueHeads + heads % V::kValueHeads)
                            : heads * (rows / V::kValueHeads + rows % V::kValueHeads);
  if (std::is_same_v<T, float> || calls == 1)
    value_sweep<V, T, T>(p, t, r0, rows, first, cold, end, s);
  else
    value_sweep<V, T, float>(p, t, r0, rows, first, cold, end, s);

  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      float* out = p.out + (r0 + r) * p.ldo + (t.head_begin + h) * p.head_dim;
      const float* o = s.out_row(r, h);
      for (int64_t d = 0; d < p.head_dim; ++d) out[d] = o[d] / *s.sum(r, h);
    }
}

template <class V, class T>
void run_tile(const Problem& p, const Tile& t, float* scratch) {
  const int64_t heads = t.head_end - t.head_begin;
  const int64_t rows = std::min(kRowsPerPass, t.row_end - t.row_begin);
  PassScratch s;
  s.heads = heads;
  s.head_dim = p.head_dim;
  s.score_stride = p.key_end(t.row_end - 1) - p.key_begin(t.row_begin) + kScorePad;
  s.scores = scratch;
  s.out = scratch + rows * heads * s.score_stride;
  s.sums = s.out + rows * heads * p.head_dim;
  s.keys = s.sums + rows * heads;
  s.keys += (16 - reinterpret_cast<uintptr_t>(s.keys) / sizeof(float) % 16) % 16;
  s.values = s.keys + kMaxKeysAtOnce * staged_vector_floats(p.head_dim);
  for (int64_t r0 = t.row_begin; r0 < t.row_end; r0 += kRowsPerPass)
    pass<V, T>(p, t, r0, std::min(kRowsPerPass, t.row_end - r0),
               r0 == t.row_begin ? 0 : p.key_end(r0 - 1), s);
}

template <class V>
void run_simd(const Problem& p, const Tile& t, float* scratch) {
  if (p.kv.type == KvType::bf16)
    run_tile<V, uint16_t>(p, t, scratch);
  else
    run_tile<V, float>(p, t, scratch);
}

}  // namespace
}  // namespace dq4::attention
