#pragma once
// W4A8 on the AMX tile unit, written once against a tile backend `Tiles` that is either the real
// instructions (x86_amx.cc) or the software model (x86_amx_model.cc, src/kernels/amx), so that the
// same code is tested bit for bit on every x86 host.
//
// Weights: the packed layout every 64-column kernel shares (../int4/layout.h, nr = 64), no second
// copy. A step of 8 k holds, per column, the nibbles of k..k+3 (low) and k+4..k+7 (high): its low
// plane is already one 64-byte row of a B tile in the VNNI order TDPB*D reads (16 columns x 4
// k), its high plane the next row. Each panel is unpacked once per call into scratch as four
// 16-column blocks of [K/4 rows x 64 bytes] (u = q + 8 in 0..15, 64 x K bytes), read by every row
// block. Activations: the qai8dx int8 rows, copied into scratch with the row length rounded up
// to 64 and the rows to 32, zero-filled, so that every tile load stays inside and the padding
// adds 0. TDPBSUD (signed activations x unsigned nibbles) gives sum a*u = sum a*q + 8 sum a, and
// the group's activation sum removes the offset in the epilogue, as the VNNI kernels do.
//
// Tiles: tmm0..3 accumulate 32 rows x 32 columns (2 x 2 of 16 x 16 int32), tmm4/5 hold the two
// 16-row A blocks, tmm6/7 the two 16-column B blocks: 4 TDPBSUD per 4 tile loads. A chunk of K is
// 64 bytes (16 k-quads), or 32 when the groups are not a multiple of 64 (G = 32): a TDPBSUD
// cannot split its K between two groups' scales, so G = 32 runs half-deep tiles, half the peak of
// the unit. Per group the four accumulators go through memory to the epilogue (int32 - 8 sum a,
// then the f32 fma with the bf16 scale in the reference's order).

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
// The unpacked panel (64 bytes per k) is kept while it fits L2; longer K goes to the fallback.
constexpr int64_t kMaxUnpackedBytes = int64_t{2} << 20;

enum TileIndex { kC00 = 0, kC01 = 1, kC10 = 2, kC11 = 3, kA0 = 4, kA1 = 5, kB0 = 6, kB1 = 7 };

// K per TDPBSUD: 64 bytes, or 32 where groups would straddle a 64-byte chunk.
inline int64_t chunk_bytes(const Layout& l) { return l.channelwise || l.group % 64 == 0 ? 64 : 32; }
// K as the tiles read it: a multiple of 64 (groups of 32 begin at multiples of 32).
inline int64_t padded_k(const Layout& l) { return round_up(l.kp, 64); }
inline int64_t unpacked_bytes(const Layout& l) { return kNr * padded_k(l); }

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
  int8_t* a;    // [rows rounded to 32, padded_k]
  uint8_t* b;   // [4 blocks][padded_k / 4][64]
  int32_t* c;   // [32][32]
  float* facc;  // [32][32]
  int64_t rows_padded;
};

inline int64_t scratch_size(const Layout& l, int64_t rows) {
  return round_up(rows, kRowBlock) * padded_k(l) + unpacked_bytes(l) + 2 * 32 * 32 * 4;
}

inline Scratch carve(const Layout& l, int64_t rows, uint8_t* p) {
  Scratch s;
  s.rows_padded = round_up(rows, kRowBlock);
  s.a = reinterpret_cast<int8_t*>(p);
  p += s.rows_padded * padded_k(l);
  s.b = p;
  p += unpacked_bytes(l);
  s.c = reinterpret_cast<int32_t*>(p);
  s.facc = reinterpret_cast<float*>(p + 32 * 32 * 4);
  return s;
}

inline float bf16_bits_to_f32(uint16_t v) {
  const uint32_t bits = uint32_t{v} << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Rows [m0, m1) of the quantized activations into the zero-padded A copy.
inline void copy_activations(const Layout& l, const QuantizedLhs& lhs, int64_t m0, int64_t m1,
                             const Scratch& s) {
  const int64_t lda = padded_k(l);
  std::memset(s.a, 0, static_cast<size_t>(s.rows_padded * lda));
  for (int64_t m = m0; m < m1; ++m)
    std::memcpy(s.a + (m - m0) * lda, lhs.q + m * lhs.ldq, static_cast<size_t>(l.kp));
}

// Panel `panel` as four 16-column B blocks of u bytes, k-quad rows of 64 bytes.
inline void unpack_panel(const Layout& l, const PanelView& panel, const Scratch& s) {
  const int64_t kpad = padded_k(l), block_bytes = kpad * 16;
  std::memset(s.b, 0, static_cast<size_t>(unpacked_bytes(l)));
  for (int64_t g = 0; g < l.groups; ++g) {
    const uint8_t* w = panel.group_data(g);
    for (int64_t st = 0; st < l.group_steps(g); ++st, w += kNr * 4) {
      const int64_t quad = (l.group_begin(g) + 8 * st) / 4;
      for (int j = 0; j < 4; ++j) {
        uint8_t* lo = s.b + j * block_bytes + quad * 64;
        for (int i = 0; i < 64; ++i) {
          const uint8_t raw = w[64 * j + i];
          lo[i] = raw & 0x0f;
          lo[64 + i] = raw >> 4;
        }
      }
    }
  }
}

// The 32 x 32 int32 sums over k in [k0, k0 + chunks * chunk) of row block rb and column half h,
// left in tmm0..3.
template <class Tiles>
inline void dot_chunks(const Layout& l, const Scratch& s, int64_t rb, int h, int64_t k0,
                       int64_t chunks, int64_t chunk) {
  const int64_t lda = padded_k(l), block_bytes = padded_k(l) * 16;
  const int8_t* a = s.a + rb * lda + k0;
  const uint8_t* b0 = s.b + (2 * h) * block_bytes + k0 * 16;
  const uint8_t* b1 = b0 + block_bytes;
  Tiles::template zero<kC00>();
  Tiles::template zero<kC01>();
  Tiles::template zero<kC10>();
  Tiles::template zero<kC11>();
  for (int64_t c = 0; c < chunks; ++c, a += chunk, b0 += chunk * 16, b1 += chunk * 16) {
    Tiles::template load<kA0>(a, lda);
    Tiles::template load<kA1>(a + 16 * lda, lda);
    Tiles::template load<kB0>(b0, 64);
    Tiles::template load<kB1>(b1, 64);
    Tiles::template dpbsud<kC00, kA0, kB0>();
    Tiles::template dpbsud<kC01, kA0, kB1>();
    Tiles::template dpbsud<kC10, kA1, kB0>();
    Tiles::template dpbsud<kC11, kA1, kB1>();
  }
}

// tmm0..3 to s.c as [32 rows][32 columns].
template <class Tiles>
inline void store_sums(const Scratch& s) {
  Tiles::template store<kC00>(s.c, 128);
  Tiles::template store<kC01>(s.c + 16, 128);
  Tiles::template store<kC10>(s.c + 16 * 32, 128);
  Tiles::template store<kC11>(s.c + 16 * 32 + 16, 128);
}

inline float clamp(float y, float lo, float hi) {
  y = y > lo ? y : lo;
  return y < hi ? y : hi;
}

// Row block rb (rows m0 + rb ..) x column half h of panel p, written to y.
template <class Tiles>
void block(const Layout& l, const PanelView& panel, const QuantizedLhs& lhs, const Scratch& s,
           int64_t m0, int64_t m1, int64_t rb, int64_t p, int h, float* y, int64_t ldy,
           kernels::Epilogue e) {
  const int64_t chunk = chunk_bytes(l);
  const int64_t c0 = 32 * h;  // first column within the panel
  const int64_t n0 = p * kNr + c0;
  const int64_t rows = std::min<int64_t>(kRowBlock, m1 - (m0 + rb));
  const int64_t cols = std::min<int64_t>(32, l.n - n0);
  float out[kRowBlock][32];
  if (l.channelwise) {
    dot_chunks<Tiles>(l, s, rb, h, 0, padded_k(l) / chunk, chunk);
    store_sums<Tiles>(s);
    const float* scales = panel.scales() + c0;
    const int32_t* column_sums = panel.column_sums() + c0;
    const float* bias = panel.cw_bias() + c0;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t m = m0 + rb + r;
      const uint32_t offset = static_cast<uint32_t>(-8 * lhs.asum[m * lhs.groups]);
      const uint32_t zp = static_cast<uint32_t>(lhs.zp[m]);
      const float recip = lhs.recip[m];
      for (int c = 0; c < 32; ++c) {
        // sum (q - zp) w = (sum a u - 8 sum a) - zp sum w, wrapping as int32 like the others
        const uint32_t u = static_cast<uint32_t>(s.c[r * 32 + c]) + offset -
                           zp * static_cast<uint32_t>(column_sums[c]);
        out[r][c] = static_cast<float>(static_cast<int32_t>(u)) * (scales[c] * recip) + bias[c];
      }
    }
  } else {
    std::fill(s.facc, s.facc + 32 * 32, 0.0f);
    for (int64_t g = 0; g < l.groups; ++g) {
      const int64_t chunks = (l.group_steps(g) * 8 + chunk - 1) / chunk;
      dot_chunks<Tiles>(l, s, rb, h, l.group_begin(g), chunks, chunk);
      store_sums<Tiles>(s);
      const uint16_t* scales = panel.group_scales(g) + c0;
      float d[32];
      for (int c = 0; c < 32; ++c) d[c] = bf16_bits_to_f32(scales[c]);
      for (int64_t r = 0; r < rows; ++r) {
        const uint32_t offset =
            static_cast<uint32_t>(-8 * lhs.asum[(m0 + rb + r) * lhs.groups + g]);
        float* acc = s.facc + r * 32;
        for (int c = 0; c < 32; ++c) {
          const int32_t sum = static_cast<int32_t>(static_cast<uint32_t>(s.c[r * 32 + c]) + offset);
          acc[c] = std::fmaf(static_cast<float>(sum), d[c], acc[c]);
        }
      }
    }
    const float* row_sums = panel.row_sums() + c0;
    const float* bias = panel.gw_bias() + c0;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t m = m0 + rb + r;
      const float neg_zp = static_cast<float>(-lhs.zp[m]);
      const float recip = lhs.recip[m];
      for (int c = 0; c < 32; ++c) {
        const float acc = std::fmaf(row_sums[c], neg_zp, s.facc[r * 32 + c]);
        out[r][c] = acc * recip + bias[c];
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* dst = y + (m0 + rb + r) * ldy + n0;
    for (int64_t c = 0; c < cols; ++c)
      kernels::write_output(dst + c, clamp(out[r][c], e.lo, e.hi), e);
  }
}

// Whether rows x layout runs on the tiles (else on the variant's fallback kernel).
inline bool on_tiles(const Layout& l, int64_t rows, int64_t min_rows) {
  return rows >= min_rows && unpacked_bytes(l) <= kMaxUnpackedBytes;
}

template <class Tiles>
void run_tiles(const Layout& l, const uint8_t* packed, const QuantizedLhs& lhs, int64_t m0,
               int64_t m1, int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue e,
               uint8_t* scratch) {
  configure<Tiles>(chunk_bytes(l));
  const Scratch s = carve(l, m1 - m0, scratch);
  copy_activations(l, lhs, m0, m1, s);
  for (int64_t p = p0; p < p1; ++p) {
    const PanelView panel = panel_view(packed, l, p);
    unpack_panel(l, panel, s);
    for (int h = 0; h < 2 && p * kNr + 32 * h < l.n; ++h)
      for (int64_t rb = 0; rb < m1 - m0; rb += kRowBlock)
        block<Tiles>(l, panel, lhs, s, m0, m1, rb, p, h, y, ldy, e);
  }
}

}  // namespace amx_w4a8

}  // namespace
}  // namespace dq4::w4a8
