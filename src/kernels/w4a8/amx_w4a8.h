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
// k), its high plane the next row. Each panel is unpacked once per call into scratch as four
// 16-column blocks of [K/4 rows x 64 bytes] of signed q = u - 8 (64 x K bytes), read by every row
// block, so that TDPBSSD gives sum a*q with no offset to remove. Activations: the qai8dx int8 rows
// are loaded where they lie when their length is a multiple of 64; otherwise, and for a last row
// block shorter than 32 rows, they are copied into scratch zero-padded to 64 k and 32 rows, so
// that every tile load stays inside and the padding adds 0.
//
// Tiles: tmm0..3 accumulate 32 rows x 32 columns (2 x 2 of 16 x 16 int32), tmm4/5 hold the two
// 16-row A blocks, tmm6/7 the two 16-column B blocks: 4 TDPBSSD per 4 tile loads, the most
// reuse 8 tiles allow; a block of at most 16 rows loads only tmm4 and runs only tmm0/1's two.
// A chunk of K is 64 bytes (16 k-quads), or 32 when the groups are not a
// multiple of 64 (G = 32): a TDPBSSD cannot split its K between two groups' scales, so G = 32
// runs half-deep tiles, half the peak of the unit. The sums go through memory to the epilogue:
// channelwise once per block; groupwise per group, a batch of groups' sums folded into the f32
// accumulators by one pass (f32 fma with the group's scale, in the reference's order).

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
// Groups whose int32 sums wait in memory for one epilogue pass: the pass then reads and writes
// each f32 accumulator once per batch rather than once per group.
constexpr int kGroupBatch = 4;
// The unpacked panel (64 bytes per k) is kept while it fits L2; longer K goes to the fallback.
constexpr int64_t kMaxUnpackedBytes = int64_t{2} << 20;

enum TileIndex { kC00 = 0, kC01 = 1, kC10 = 2, kC11 = 3, kA0 = 4, kA1 = 5, kB0 = 6, kB1 = 7 };

// K per TDPBSSD: 64 bytes, or 32 where groups would straddle a 64-byte chunk.
inline int64_t chunk_bytes(const Layout& l) { return l.channelwise || l.group % 64 == 0 ? 64 : 32; }
// K as the tiles read it: a multiple of 64 (groups of 32 begin at multiples of 32).
inline int64_t padded_k(const Layout& l) { return round_up(l.kp, 64); }
inline int64_t unpacked_bytes(const Layout& l) { return kNr * padded_k(l); }
// Whether the activation rows (kp bytes apart) are read in place by the tile loads.
inline bool rows_in_place(const Layout& l) { return l.kp == padded_k(l); }

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

struct Scratch {
  int8_t* a;     // [rows rounded to 32, or 32 when rows_in_place][padded_k]
  int8_t* b;     // [4 blocks][padded_k / 4][64]
  int32_t* c;    // [kGroupBatch][32][32]
  float* facc;   // [32][32]
  float* scale;  // [groups][64] the panel's group scales as f32
};

inline int64_t a_rows(const Layout& l, int64_t rows) {
  return rows_in_place(l) ? kRowBlock : round_up(rows, kRowBlock);
}

inline int64_t scratch_size(const Layout& l, int64_t rows) {
  return a_rows(l, rows) * padded_k(l) + unpacked_bytes(l) + kGroupBatch * kBlockSums * 4 +
         kBlockSums * 4 + (l.channelwise ? 0 : l.groups * kNr * 4);
}

inline Scratch carve(const Layout& l, int64_t rows, uint8_t* p) {
  Scratch s;
  s.a = reinterpret_cast<int8_t*>(p);
  p += a_rows(l, rows) * padded_k(l);
  s.b = reinterpret_cast<int8_t*>(p);
  p += unpacked_bytes(l);
  s.c = reinterpret_cast<int32_t*>(p);
  p += kGroupBatch * kBlockSums * 4;
  s.facc = reinterpret_cast<float*>(p);
  p += kBlockSums * 4;
  s.scale = reinterpret_cast<float*>(p);
  return s;
}

// Rows [m0, m1) of the quantized activations into the zero-padded A copy.
inline void copy_activations(const Layout& l, const QuantizedLhs& lhs, int64_t m0, int64_t m1,
                             int8_t* a) {
  const int64_t lda = padded_k(l);
  std::memset(a, 0, static_cast<size_t>(round_up(m1 - m0, kRowBlock) * lda));
  for (int64_t m = m0; m < m1; ++m)
    std::memcpy(a + (m - m0) * lda, lhs.q + m * lhs.ldq, static_cast<size_t>(l.kp));
}

// Panel `panel` as four 16-column B blocks of q bytes, k-quad rows of 64 bytes, and (groupwise)
// its group scales as f32.
template <class Simd>
void unpack_panel(const Layout& l, const PanelView& panel, const Scratch& s) {
  const int64_t kpad = padded_k(l), block_bytes = kpad * 16;
  for (int64_t g = 0; g < l.groups; ++g) {
    const uint8_t* w = panel.group_data(g);
    const int64_t quad = l.group_begin(g) / 4;
    for (int64_t st = 0; st < l.group_steps(g); ++st, w += kNr * 4)
      Simd::unpack_step(w, s.b + (quad + 2 * st) * 64, block_bytes);
  }
  const int64_t end = l.kp * 16;  // bytes of a block the steps wrote
  for (int j = 0; j < 4; ++j)
    std::memset(s.b + j * block_bytes + end, 0, static_cast<size_t>(block_bytes - end));
  if (!l.channelwise)
    for (int64_t g = 0; g < l.groups; ++g)
      Simd::widen_scales(panel.group_scales(g), s.scale + g * kNr);
}

// The 32 x 32 int32 sums over k in [k0, k0 + chunks * chunk) of the A rows at `a` (lda apart)
// and the B block pair at `b` (column half), stored to `sums` as [32 rows][32 columns].
// The next panel's packed bytes, fetched into L2 a few lines per chunk while this panel
// computes: the weights' read then overlaps the tiles' work instead of preceding the unpack.
struct Prefetch {
  const uint8_t* next;
  const uint8_t* end;
  int64_t lines_per_chunk;
};

// With kBothRowTiles false only the first 16 rows: a block of at most 16 rows leaves out the A
// tile of zeros and the two TDPBSSD on it (the sums' rows 16..31 are then not written).
template <class Tiles, class Simd, bool kBothRowTiles>
inline void dot_chunks(const int8_t* a, int64_t lda, const int8_t* b0, int64_t block_bytes,
                       int64_t k0, int64_t chunks, int64_t chunk, int32_t* sums, Prefetch& pf) {
  a += k0;
  b0 += k0 * 16;
  const int8_t* b1 = b0 + block_bytes;
  Tiles::template zero<kC00>();
  Tiles::template zero<kC01>();
  if constexpr (kBothRowTiles) {
    Tiles::template zero<kC10>();
    Tiles::template zero<kC11>();
  }
  for (int64_t c = 0; c < chunks; ++c, a += chunk, b0 += chunk * 16, b1 += chunk * 16) {
    Tiles::template load<kA0>(a, lda);
    if constexpr (kBothRowTiles) Tiles::template load<kA1>(a + 16 * lda, lda);
    Tiles::template load<kB0>(b0, 64);
    Tiles::template load<kB1>(b1, 64);
    Tiles::template dpbssd<kC00, kA0, kB0>();
    Tiles::template dpbssd<kC01, kA0, kB1>();
    if constexpr (kBothRowTiles) {
      Tiles::template dpbssd<kC10, kA1, kB0>();
      Tiles::template dpbssd<kC11, kA1, kB1>();
    }
    for (int64_t i = 0; i < pf.lines_per_chunk && pf.next < pf.end; ++i, pf.next += 64)
      Simd::prefetch(pf.next);
  }
  Tiles::template store<kC00>(sums, 128);
  Tiles::template store<kC01>(sums + 16, 128);
  if constexpr (kBothRowTiles) {
    Tiles::template store<kC10>(sums + 16 * 32, 128);
    Tiles::template store<kC11>(sums + 16 * 32 + 16, 128);
  }
}

template <class Tiles, class Simd>
inline void dot_chunks(const int8_t* a, int64_t lda, const int8_t* b0, int64_t block_bytes,
                       int64_t k0, int64_t chunks, int64_t chunk, int32_t* sums, int rows,
                       Prefetch& pf) {
  if (rows > 16)
    return dot_chunks<Tiles, Simd, true>(a, lda, b0, block_bytes, k0, chunks, chunk, sums, pf);
  dot_chunks<Tiles, Simd, false>(a, lda, b0, block_bytes, k0, chunks, chunk, sums, pf);
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

// One row block x column half of a panel, from the A rows at `a` (lda apart).
template <class Tiles, class Simd>
void block(const Layout& l, const Scratch& s, const int8_t* a, int64_t lda, const BlockOut& o,
           Prefetch& pf) {
  const int64_t chunk = chunk_bytes(l), block_bytes = padded_k(l) * 16;
  const int8_t* b = s.b + (o.c0 / 16) * block_bytes;
  if (l.channelwise) {
    dot_chunks<Tiles, Simd>(a, lda, b, block_bytes, 0, padded_k(l) / chunk, chunk, s.c, o.rows, pf);
    return Simd::finish_channelwise(s.c, o);
  }
  for (int64_t g0 = 0; g0 < l.groups; g0 += kGroupBatch) {
    const int batch = static_cast<int>(std::min<int64_t>(kGroupBatch, l.groups - g0));
    for (int i = 0; i < batch; ++i) {
      const int64_t g = g0 + i;
      const int64_t chunks = (l.group_steps(g) * 8 + chunk - 1) / chunk;
      dot_chunks<Tiles, Simd>(a, lda, b, block_bytes, l.group_begin(g), chunks, chunk,
                              s.c + i * kBlockSums, o.rows, pf);
    }
    Simd::accumulate_groups(s.c, s.scale + g0 * kNr + o.c0, batch, o.rows, s.facc, g0 == 0);
  }
  Simd::finish_groupwise(s.facc, o);
}

// Whether rows x layout runs on the tiles (else on the variant's fallback kernel).
inline bool on_tiles(const Layout& l, int64_t rows, int64_t min_rows) {
  return rows >= min_rows && unpacked_bytes(l) <= kMaxUnpackedBytes;
}

template <class Tiles, class Simd>
void run_tiles(const Layout& l, const uint8_t* packed, const QuantizedLhs& lhs, int64_t m0,
               int64_t m1, int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue e,
               uint8_t* scratch) {
  configure<Tiles>(chunk_bytes(l));
  const Scratch s = carve(l, m1 - m0, scratch);
  const int64_t rows = m1 - m0, lda = padded_k(l);
  // Row blocks read in place, and the first row of the one copied (the last, when partial).
  const bool in_place = rows_in_place(l);
  const int64_t copied = in_place ? rows / kRowBlock * kRowBlock : 0;
  if (copied < rows) copy_activations(l, lhs, m0 + copied, m1, s.a);
  for (int64_t p = p0; p < p1; ++p) {
    const PanelView panel = panel_view(packed, l, p);
    unpack_panel<Simd>(l, panel, s);
    const int64_t halves = std::min<int64_t>(2, (l.n - p * kNr + 31) / 32);
    const int64_t chunks = halves * ((rows + kRowBlock - 1) / kRowBlock) * (padded_k(l) / 32);
    const uint8_t* next = panel.base + l.panel_bytes;
    Prefetch pf{next, p + 1 < p1 ? next + l.panel_bytes : next,
                (l.panel_bytes / 64 + chunks - 1) / chunks * (chunk_bytes(l) / 32)};
    for (int c0 = 0; c0 < kNr && p * kNr + c0 < l.n; c0 += 32)
      for (int64_t rb = 0; rb < rows; rb += kRowBlock) {
        const int8_t* a = rb < copied ? lhs.q + (m0 + rb) * lhs.ldq : s.a + (rb - copied) * lda;
        BlockOut o;
        o.panel = &panel;
        o.lhs = &lhs;
        o.m = m0 + rb;
        o.rows = static_cast<int>(std::min<int64_t>(kRowBlock, rows - rb));
        o.c0 = c0;
        o.cols = static_cast<int>(std::min<int64_t>(32, l.n - p * kNr - c0));
        o.y = y + o.m * ldy + p * kNr + c0;
        o.ldy = ldy;
        o.e = e;
        block<Tiles, Simd>(l, s, a, lda, o, pf);
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
