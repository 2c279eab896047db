#pragma once
// W4A8 on the AMX tile unit, written once against a tile backend `Tiles` that is either the real
// instructions (x86_amx.cc) or the software model (x86_amx_model.cc, src/kernels/amx), and a
// backend `Simd` for the work around the tiles (unpacking the weights, the epilogue): AVX-512 on
// the real unit, portable scalar code on the model. Both compute the same values in the same
// order, so the same tile code is tested bit for bit on every x86 host.
//
// Weights: the packed layout every 64-column kernel shares (../int4/layout.h, nr = 64), no second
// copy. A step of 8 k holds, per column, the nibbles of k..k+3 (low) and k+4..k+7 (high): its low
// plane is already one 64-byte row of a B tile in the VNNI order TDPB*D reads (16 columns x 4
// k), its high plane the next row. A panel is unpacked a K block at a time (kKBlock k) into a
// slice of signed q = u - 8 (four 16-column blocks of k-quad rows of 64 bytes), so that TDPBSSD
// gives sum a*q with no offset to remove, and every row block of the call runs over the slice
// while it is in L1: the unpack is done once per panel and the B tiles never come from L2.
// Activations: the qai8dx int8 rows of a pass (kPassBytes of them) are copied once into tile
// order, each 16-row tile x K chunk 1 KiB (or 512 bytes) contiguous and zero-padded to 32 rows
// and 64 k: a row block's slice of a K block is then contiguous in L1 (rows K bytes apart would
// share its sets) and the padding adds 0. The copy stays in the thread's scratch: the next tile
// of the same rows on the thread (other panels of the same call) reuses it.
//
// Tiles: tmm0..3 accumulate 32 rows x 32 columns (2 x 2 of 16 x 16 int32), tmm4/5 hold the two
// 16-row A blocks, tmm6/7 the two 16-column B blocks: 4 TDPBSSD per 4 tile loads, the most
// reuse 8 tiles allow; a block of at most 16 rows loads only tmm4 and runs only tmm0/1's two.
// Between K blocks of one group the accumulators wait in scratch. A chunk of K is 64 bytes (16
// k-quads), or 32 when the groups are not a multiple of 64 (G = 32): a TDPBSSD cannot split its K
// between two groups' scales, so G = 32 runs half-deep tiles, half the peak of the unit. The sums
// go through memory to the epilogue: channelwise once per block; groupwise per group, a batch of
// groups' sums folded into the f32 accumulators by one pass (f32 fma with the group's scale, in
// the reference's order).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "../amx/tile_config.h"
#include "kernel.h"

namespace dq4::w4a8 {
namespace {  // internal: the file including this is compiled with its own ISA flags

namespace amx_w4a8 {

constexpr int kNr = 64;
constexpr int kRowBlock = 32;  // two 16-row A tiles
constexpr int kBlockSums = kRowBlock * 32;
// K per block: its unpacked slice (64 bytes per k) and a row block's activations (32 bytes per k)
// stay in L1 together.
constexpr int64_t kKBlock = 256;
constexpr int kMaxPieces = kKBlock / 32;  // groups (or parts of one) in a K block
// Groups whose int32 sums wait in memory for one epilogue pass: the pass then reads and writes
// each f32 accumulator once per batch rather than once per group.
constexpr int kGroupBatch = 4;
// Activation bytes copied into tile order per pass: a pass's rows are re-read for every panel,
// from L2 while they fit.
constexpr int64_t kPassBytes = int64_t{1} << 20;
// How far ahead of a panel's unpack its weights are fetched when the next panel follows it in
// memory (else the next one is fetched whole). A whole panel ahead, hundreds of KiB at K >= 8192,
// measured slower: its lines wait in L2 beside the panel being read and the pass's activations.
constexpr int64_t kPrefetchAhead = 64 << 10;
// Longer K goes to the fallback: a pass of 32 rows would no longer fit L2.
constexpr int64_t kMaxTileK = 32768;

enum TileIndex { kC00 = 0, kC01 = 1, kC10 = 2, kC11 = 3, kA0 = 4, kA1 = 5, kB0 = 6, kB1 = 7 };

// K per TDPBSSD: 64 bytes, or 32 where groups would straddle a 64-byte chunk.
inline int64_t chunk_bytes(const Layout& l) { return l.channelwise || l.group % 64 == 0 ? 64 : 32; }
// K as the tiles read it: a multiple of 64 (groups of 32 begin at multiples of 32).
inline int64_t padded_k(const Layout& l) { return round_up(l.kp, 64); }
// Bytes between the unpacked slice's 16-column blocks.
constexpr int64_t kSliceBlockBytes = kKBlock * 16;

inline amx::TileConfig tile_config(int64_t chunk) {
  amx::TileConfig c;
  for (int t : {kC00, kC01, kC10, kC11}) c.set(t, 16, 64);
  for (int t : {kA0, kA1}) c.set(t, 16, static_cast<int>(chunk));
  for (int t : {kB0, kB1}) c.set(t, static_cast<int>(chunk / 4), 64);
  return c;
}

// Loads the configuration for `chunk` unless this thread's tiles hold it already (the tile state
// is per thread and survives preemption once the OS saves it). Read back rather than remembered:
// other tile code on the thread (the bench's peak probe) may have reconfigured or released them.
template <class Tiles>
void configure(int64_t chunk) {
  const amx::TileConfig wanted = tile_config(chunk);
  const amx::TileConfig held = Tiles::config();
  if (std::memcmp(&held, &wanted, sizeof wanted) != 0) Tiles::configure(wanted);
}

// Rows per pass: a multiple of 32 whose tile-order copy stays within kPassBytes (at least 32).
inline int64_t pass_rows(const Layout& l, int64_t rows) {
  const int64_t cap =
      std::max<int64_t>(kRowBlock, kPassBytes / padded_k(l) / kRowBlock * kRowBlock);
  return std::min(round_up(rows, kRowBlock), cap);
}

struct Scratch {
  int8_t* a;      // [pass rows / 16 tiles][padded_k / chunk][16][chunk]
  int8_t* b;      // [4 blocks][kKBlock / 4][64]
  int32_t* c;     // [kGroupBatch][32][32] finished groups' sums
  int32_t* part;  // [pass rows / 32][2 halves][32][32] sums of a group split between K blocks
  float* facc;    // groupwise: [pass rows / 32][2 halves][32][32]
  float* scale;   // groupwise: [kMaxPieces][64] the K block's group scales as f32
};

inline int64_t scratch_size(const Layout& l, int64_t rows) {
  const int64_t pass = pass_rows(l, rows), block_sums = pass / kRowBlock * 2 * kBlockSums * 4;
  return pass * padded_k(l) + kNr * kKBlock + kGroupBatch * kBlockSums * 4 + block_sums +
         (l.channelwise ? 0 : block_sums + kMaxPieces * kNr * 4);
}

inline Scratch carve(const Layout& l, int64_t rows, uint8_t* p) {
  const int64_t pass = pass_rows(l, rows), block_sums = pass / kRowBlock * 2 * kBlockSums * 4;
  Scratch s;
  s.a = reinterpret_cast<int8_t*>(p);
  p += pass * padded_k(l);
  s.b = reinterpret_cast<int8_t*>(p);
  p += kNr * kKBlock;
  s.c = reinterpret_cast<int32_t*>(p);
  p += kGroupBatch * kBlockSums * 4;
  s.part = reinterpret_cast<int32_t*>(p);
  p += block_sums;
  s.facc = reinterpret_cast<float*>(p);
  p += l.channelwise ? 0 : block_sums;
  s.scale = reinterpret_cast<float*>(p);
  return s;
}

// Rows [m0, m1) of the quantized activations in tile order, zero-padded to 32 rows and
// padded_k: the 16-row tile t's chunk of k at a + t * 16 * padded_k + k * 16, rows `chunk` apart.
inline void copy_activations(const Layout& l, const QuantizedLhs& lhs, int64_t m0, int64_t m1,
                             int8_t* a) {
  const int64_t chunk = chunk_bytes(l), kpad = padded_k(l), rows = round_up(m1 - m0, kRowBlock);
  for (int64_t r = 0; r < rows; ++r) {
    int8_t* tile = a + r / 16 * 16 * kpad + r % 16 * chunk;
    const int8_t* src = lhs.q + (m0 + r) * lhs.ldq;
    for (int64_t k = 0; k < kpad; k += chunk) {
      const int64_t n = r < m1 - m0 ? std::clamp<int64_t>(l.kp - k, 0, chunk) : 0;
      if (n == 64)  // a constant length: copied by vector moves
        std::memcpy(tile + k * 16, src + k, 64);
      else if (n > 0)
        std::memcpy(tile + k * 16, src + k, static_cast<size_t>(n));
      if (n < chunk) std::memset(tile + k * 16 + n, 0, static_cast<size_t>(chunk - n));
    }
  }
}

// A run of K within one group: the whole group, or the part of a group longer than kKBlock that
// falls in one K block. `first`/`last`: whether it begins/ends its group.
struct Piece {
  int64_t group, k0, k1;
  bool first, last;
};

// A K block: consecutive whole groups, or one part of a long group (channelwise: of K), at most
// kKBlock k in all, starting at a multiple of the chunk.
struct KBlock {
  int64_t k0 = 0, k1 = 0;
  int count = 0;
  Piece pieces[kMaxPieces];
};

// Group g's k as the packed steps hold it (the last group rounded up to 32).
inline int64_t group_k1(const Layout& l, int64_t g) {
  return l.group_begin(g) + l.group_steps(g) * 8;
}

// The K block starting `*off` k into group `*g`; advances both to the next block's start.
inline KBlock next_block(const Layout& l, int64_t* g, int64_t* off) {
  KBlock b;
  b.k0 = l.group_begin(*g) + *off;
  const int64_t end = b.k0 + kKBlock;
  while (*g < l.groups && b.count < kMaxPieces) {
    const int64_t g0 = l.group_begin(*g), g1 = group_k1(l, *g), k0 = g0 + *off;
    if (g1 > end && b.count > 0) break;  // begins the next block whole
    Piece& p = b.pieces[b.count++];
    p = Piece{*g, k0, std::min(g1, end), k0 == g0, g1 <= end};
    b.k1 = p.k1;
    if (!p.last) {
      *off = p.k1 - g0;
      break;
    }
    ++*g;
    *off = 0;
  }
  return b;
}

// The panel's K block as four 16-column blocks of q bytes (k-quad rows of 64 bytes, zero to the
// chunk after the last k), and (groupwise) each piece's group scales as f32.
template <class Simd>
void unpack_block(const Layout& l, const PanelView& panel, const KBlock& kb, const Scratch& s) {
  for (int i = 0; i < kb.count; ++i) {
    const Piece& p = kb.pieces[i];
    const uint8_t* w = panel.group_data(p.group) + (p.k0 - l.group_begin(p.group)) / 8 * kNr * 4;
    int8_t* b = s.b + (p.k0 - kb.k0) / 4 * 64;
    for (int64_t k = p.k0; k < p.k1; k += 8, w += kNr * 4, b += 128)
      Simd::unpack_step(w, b, kSliceBlockBytes);
    if (!l.channelwise) Simd::widen_scales(panel.group_scales(p.group), s.scale + i * kNr);
  }
  const int64_t end = (kb.k1 - kb.k0) * 16, padded = round_up(kb.k1 - kb.k0, chunk_bytes(l)) * 16;
  if (end < padded)
    for (int j = 0; j < 4; ++j)
      std::memset(s.b + j * kSliceBlockBytes + end, 0, static_cast<size_t>(padded - end));
}

// The weights ahead (kPrefetchAhead into this panel and on into the next, or the next pass's first
// panel), fetched into L2 a few lines per chunk while this panel computes, one panel's worth in
// all: the weights' read then overlaps the tiles' work instead of preceding the unpack.
struct Prefetch {
  const uint8_t* next;
  const uint8_t* end;
  int64_t lines_per_chunk;
};

// The 32 x 32 int32 sums of `chunks` chunks of the A tiles at `a` (the second 16 * padded_k
// further) and the B block pair at `b`, starting from `in` (null: from 0), stored to `out`, both
// [32 rows][32 columns]. With kBothRowTiles false only the first 16 rows: a block of at most 16
// rows leaves out the A tile of zeros and the two TDPBSSD on it (rows 16..31 are not written).
template <class Tiles, class Simd, bool kBothRowTiles>
inline void dot_chunks(const int8_t* a, int64_t a1, const int8_t* b, int64_t chunks, int64_t chunk,
                       const int32_t* in, int32_t* out, Prefetch& pf) {
  if (in != nullptr) {
    Tiles::template load<kC00>(in, 128);
    Tiles::template load<kC01>(in + 16, 128);
    if constexpr (kBothRowTiles) {
      Tiles::template load<kC10>(in + 16 * 32, 128);
      Tiles::template load<kC11>(in + 16 * 32 + 16, 128);
    }
  } else {
    Tiles::template zero<kC00>();
    Tiles::template zero<kC01>();
    if constexpr (kBothRowTiles) {
      Tiles::template zero<kC10>();
      Tiles::template zero<kC11>();
    }
  }
  for (int64_t c = 0; c < chunks; ++c, a += chunk * 16, b += chunk * 16) {
    Tiles::template load<kA0>(a, chunk);
    if constexpr (kBothRowTiles) Tiles::template load<kA1>(a + a1, chunk);
    Tiles::template load<kB0>(b, 64);
    Tiles::template load<kB1>(b + kSliceBlockBytes, 64);
    Tiles::template dpbssd<kC00, kA0, kB0>();
    Tiles::template dpbssd<kC01, kA0, kB1>();
    if constexpr (kBothRowTiles) {
      Tiles::template dpbssd<kC10, kA1, kB0>();
      Tiles::template dpbssd<kC11, kA1, kB1>();
    }
    for (int64_t i = 0; i < pf.lines_per_chunk && pf.next < pf.end; ++i, pf.next += 64)
      Simd::prefetch(pf.next);
  }
  Tiles::template store<kC00>(out, 128);
  Tiles::template store<kC01>(out + 16, 128);
  if constexpr (kBothRowTiles) {
    Tiles::template store<kC10>(out + 16 * 32, 128);
    Tiles::template store<kC11>(out + 16 * 32 + 16, 128);
  }
}

// Where one row block's outputs go and what its epilogue reads: rows [m, m + rows) of the
// activations, columns [c0, c0 + cols) of the panel (c0: 0 or 32), output row m at y.
struct BlockOut {
  const PanelView* panel;
  const QuantizedLhs* lhs;
  int64_t m;
  int rows, c0, cols;
  float* y;
  int64_t ldy;
  kernels::Epilogue e;
};

// One K block of one row block x column half: the A tiles at `a`, the sums of a split group in
// `part`, the groupwise f32 accumulators in `facc`.
template <class Tiles, class Simd, bool kBothRowTiles>
void block(const Layout& l, const Scratch& s, const KBlock& kb, const int8_t* a, int32_t* part,
           float* facc, const BlockOut& o, Prefetch& pf) {
  const int64_t chunk = chunk_bytes(l), a1 = 16 * padded_k(l);
  const int8_t* b = s.b + (o.c0 / 16) * kSliceBlockBytes;
  int batch = 0, batch_start = 0;  // finished groups waiting in s.c, from piece batch_start on
  const auto fold = [&] {
    Simd::accumulate_groups(s.c, s.scale + batch_start * kNr + o.c0, batch, o.rows, facc,
                            kb.pieces[batch_start].group == 0);
    batch = 0;
  };
  for (int i = 0; i < kb.count; ++i) {
    const Piece& p = kb.pieces[i];
    int32_t* out = p.last ? s.c + batch * kBlockSums : part;
    dot_chunks<Tiles, Simd, kBothRowTiles>(a + p.k0 * 16, a1, b + (p.k0 - kb.k0) * 16,
                                           (p.k1 - p.k0 + chunk - 1) / chunk, chunk,
                                           p.first ? nullptr : part, out, pf);
    if (!p.last) continue;
    if (l.channelwise) {
      Simd::finish_channelwise(out, o);
      continue;
    }
    if (batch++ == 0) batch_start = i;
    if (batch == kGroupBatch) fold();
  }
  if (batch > 0) fold();
  if (!l.channelwise && kb.pieces[kb.count - 1].group + 1 == l.groups &&
      kb.pieces[kb.count - 1].last)
    Simd::finish_groupwise(facc, o);
}

// Whether rows x layout runs on the tiles (else on the variant's fallback kernel).
inline bool on_tiles(const Layout& l, int64_t rows, int64_t min_rows) {
  return rows >= min_rows && padded_k(l) <= kMaxTileK;
}

template <class Tiles, class Simd>
void run_tiles(const Layout& l, const uint8_t* packed, const QuantizedLhs& lhs, int64_t m0,
               int64_t m1, int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue e,
               uint8_t* scratch) {
  configure<Tiles>(chunk_bytes(l));
  const Scratch s = carve(l, m1 - m0, scratch);
  const int64_t pass = pass_rows(l, m1 - m0), kpad = padded_k(l);
  for (int64_t mp = m0; mp < m1; mp += pass) {
    const int64_t rows = std::min(pass, m1 - mp);
    // One pass: the previous run() of these rows on this thread left the same copy.
    if (!(lhs.scratch_kept && rows == m1 - m0)) copy_activations(l, lhs, mp, mp + rows, s.a);
    for (int64_t p = p0; p < p1; ++p) {
      const PanelView panel = panel_view(packed, l, p);
      const int64_t halves = std::min<int64_t>(2, (l.n - p * kNr + 31) / 32);
      const int64_t chunks = halves * ((rows + kRowBlock - 1) / kRowBlock) * (kpad / 32);
      // The next panel, or the next pass's first.
      const int64_t next = p + 1 < p1 ? p + 1 : mp + pass < m1 ? p0 : -1;
      const uint8_t* next_base = packed + std::max<int64_t>(next, 0) * l.panel_bytes;
      const uint8_t* first =
          next == p + 1 ? packed + p * l.panel_bytes + std::min(l.panel_bytes, kPrefetchAhead)
                        : next_base;
      Prefetch pf{first, next < 0 ? next_base : next_base + l.panel_bytes,
                  (l.panel_bytes / 64 + chunks - 1) / chunks * (chunk_bytes(l) / 32)};
      for (int64_t g = 0, off = 0; g < l.groups;) {
        const KBlock kb = next_block(l, &g, &off);
        unpack_block<Simd>(l, panel, kb, s);
        for (int64_t rb = 0; rb < rows; rb += kRowBlock)
          for (int half = 0; half < halves; ++half) {
            BlockOut o;
            o.panel = &panel;
            o.lhs = &lhs;
            o.m = mp + rb;
            o.rows = static_cast<int>(std::min<int64_t>(kRowBlock, rows - rb));
            o.c0 = 32 * half;
            o.cols = static_cast<int>(std::min<int64_t>(32, l.n - p * kNr - o.c0));
            o.y = y + o.m * ldy + p * kNr + o.c0;
            o.ldy = ldy;
            o.e = e;
            const int64_t slot = (rb / kRowBlock * 2 + half) * kBlockSums;
            const int8_t* a = s.a + rb * kpad;
            float* facc = l.channelwise ? nullptr : s.facc + slot;
            if (o.rows > 16)
              block<Tiles, Simd, true>(l, s, kb, a, s.part + slot, facc, o, pf);
            else
              block<Tiles, Simd, false>(l, s, kb, a, s.part + slot, facc, o, pf);
          }
      }
    }
  }
}

// The Simd backend in portable scalar code (the model's): the same values, in the same order, as
// the AVX-512 one (x86_amx.cc).
struct ScalarSimd {
  // One step of 8 k of 64 columns (256 bytes) to its two k-quad rows in each of the 4 blocks.
  static void unpack_step(const uint8_t* w, int8_t* b, int64_t block_bytes) {
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 64; ++i) {
        const uint8_t raw = w[64 * j + i];
        b[j * block_bytes + i] = static_cast<int8_t>((raw & 0x0f) - 8);
        b[j * block_bytes + 64 + i] = static_cast<int8_t>((raw >> 4) - 8);
      }
  }
  static void prefetch(const void*) {}
  static void widen_scales(const uint16_t* bf16, float* f32) {
    for (int c = 0; c < kNr; ++c) {
      const uint32_t bits = uint32_t{bf16[c]} << 16;
      std::memcpy(f32 + c, &bits, 4);
    }
  }
  static float clamp(float y, float lo, float hi) {
    y = y > lo ? y : lo;
    return y < hi ? y : hi;
  }
  static void finish_channelwise(const int32_t* sums, const BlockOut& o) {
    const float* scales = o.panel->scales() + o.c0;
    const int32_t* column_sums = o.panel->column_sums() + o.c0;
    const float* bias = o.panel->cw_bias() + o.c0;
    for (int r = 0; r < o.rows; ++r) {
      const int64_t m = o.m + r;
      const uint32_t zp = static_cast<uint32_t>(o.lhs->zp[m]);
      const float recip = o.lhs->recip[m];
      for (int c = 0; c < o.cols; ++c) {
        // sum (q - zp) w = sum q w - zp sum w, wrapping as int32 like the others
        const uint32_t u =
            static_cast<uint32_t>(sums[r * 32 + c]) - zp * static_cast<uint32_t>(column_sums[c]);
        const float v = static_cast<float>(static_cast<int32_t>(u)) * (scales[c] * recip) + bias[c];
        kernels::write_output(o.y + r * o.ldy + c, clamp(v, o.e.lo, o.e.hi), o.e);
      }
    }
  }
  // facc[r][c] (= 0 first) += each of `groups` groups' sums[i][r][c] times scale[i * 64 + c].
  static void accumulate_groups(const int32_t* sums, const float* scale, int groups, int rows,
                                float* facc, bool first) {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < 32; ++c) {
        float acc = first ? 0.0f : facc[r * 32 + c];
        for (int i = 0; i < groups; ++i)
          acc = std::fmaf(static_cast<float>(sums[i * kBlockSums + r * 32 + c]), scale[i * kNr + c],
                          acc);
        facc[r * 32 + c] = acc;
      }
  }
  static void finish_groupwise(const float* facc, const BlockOut& o) {
    const float* row_sums = o.panel->row_sums() + o.c0;
    const float* bias = o.panel->gw_bias() + o.c0;
    for (int r = 0; r < o.rows; ++r) {
      const int64_t m = o.m + r;
      const float neg_zp = static_cast<float>(-o.lhs->zp[m]);
      const float recip = o.lhs->recip[m];
      for (int c = 0; c < o.cols; ++c) {
        const float acc = std::fmaf(row_sums[c], neg_zp, facc[r * 32 + c]);
        kernels::write_output(o.y + r * o.ldy + c, clamp(acc * recip + bias[c], o.e.lo, o.e.hi),
                              o.e);
      }
    }
  }
};

}  // namespace amx_w4a8

}  // namespace
}  // namespace dq4::w4a8
