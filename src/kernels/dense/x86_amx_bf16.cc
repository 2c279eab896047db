// Dense on the AMX tile unit: TDPBF16PS on bf16 activation pairs (the bf16 math of dense.h, not
// exact; chosen only by name), over the packed layout as it is: a panel's steps are the rows of
// the B tiles (a step holds, per column, the pair of weights TDPBF16PS multiplies by a pair of
// activations), 16 steps (32 k) by 16 columns per tile, four tiles across a 64-column panel.
// F32 weights, K not a multiple of 32 (a tile's depth) and calls of few rows take the AVX512-BF16
// kernel.
// Compiled with AVX-512 (BF16) and -mamx-tile -mamx-bf16.

#include <immintrin.h>

#include <algorithm>

#include "../amx/hardware_config.h"
#include "x86_zmm_dense.h"

namespace dq4::dense {

extern const Kernel kAvx512Bf16Kernel;

namespace {

constexpr int kTileRows = 16;       // activation rows per A tile and output rows per C tile
constexpr int64_t kTileSteps = 16;  // steps (k pairs) per tile: 64 bytes of A per row
constexpr int kColumnTiles = Zmm::kNr / 16;
// Fewer rows run VDPBF16PS (the AVX512-BF16 kernel): a 1-row tile product streams the weights
// no faster than the vector loop, which needs no tile store and reload.
constexpr int64_t kMinRows = 4;
// B tiles stream from memory: the chunk this far ahead is asked for while the current one runs.
constexpr int64_t kPrefetchChunks = 2;

// The configuration for `rows` activation rows (other tile code on the thread, such as the W4A8
// AMX kernel, configures the tiles its own way).
void configure(int rows) {
  amx::TileConfig wanted;
  for (int t = 0; t < kColumnTiles; ++t) wanted.set(t, rows, 64);
  wanted.set(4, rows, 64);
  wanted.set(5, kTileSteps, 64);
  wanted.set(6, kTileSteps, 64);
  amx::ensure_config(wanted);
}

// GCC's tile intrinsics do not tell the compiler what memory they read or write: a barrier
// before the loads (activations and weights written by ordinary stores) and after the stores
// (read back with vector loads).
inline void memory_barrier() { __asm__ volatile("" ::: "memory"); }

// Rows m..m+rows-1 of the panel's 64 outputs, summed over all of K into `sums` ([4][16][16]).
// The C tiles are tmm0..3 (the panel's four 16-column quarters), A is tmm4, and B alternates
// between tmm5 and tmm6 so that a load need not wait for the previous product. (GCC's tile
// intrinsics paste the tile number into the instruction: literals only.)
void panel_rows(const Layout& l, const uint8_t* panel, const Lhs& lhs, int64_t m, float* sums) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const int64_t a_stride = lhs.ld_pairs * 4;
  const uint32_t* a = lhs.pairs + m * lhs.ld_pairs;
  const int64_t chunk_bytes = kTileSteps * l.step_bytes;
  memory_barrier();
  for (int64_t s = 0; s < l.steps; s += kTileSteps) {
    const uint8_t* b = panel + s * l.step_bytes;
    const uint8_t* ahead = b + kPrefetchChunks * chunk_bytes;
    if (s + kPrefetchChunks * kTileSteps < l.steps)
      for (int64_t off = 0; off < chunk_bytes; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(ahead + off), _MM_HINT_T0);
    _tile_loadd(4, a + s, a_stride);
    _tile_loadd(5, b, l.step_bytes);
    _tile_dpbf16ps(0, 4, 5);
    _tile_loadd(6, b + 64, l.step_bytes);
    _tile_dpbf16ps(1, 4, 6);
    _tile_loadd(5, b + 128, l.step_bytes);
    _tile_dpbf16ps(2, 4, 5);
    _tile_loadd(6, b + 192, l.step_bytes);
    _tile_dpbf16ps(3, 4, 6);
  }
  _tile_stored(0, sums, 64);
  _tile_stored(1, sums + 256, 64);
  _tile_stored(2, sums + 512, 64);
  _tile_stored(3, sums + 768, 64);
  memory_barrier();
}

__mmask16 tail_mask(int64_t valid) {
  return valid >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << valid) - 1);
}

// y = clamp(sums + bias) for the rows and the panel's columns that exist, stored or added.
void epilogue(const Layout& l, const uint8_t* panel, const float* sums, int64_t m, int rows,
              int64_t n0, float* y, int64_t ldy, kernels::Epilogue e) {
  const float* bias = panel_bias(panel, l);
  const __m512 lo = _mm512_set1_ps(e.lo), hi = _mm512_set1_ps(e.hi);
  for (int r = 0; r < rows; ++r) {
    float* row = y + (m + r) * ldy + n0;
    for (int j = 0; j < kColumnTiles; ++j) {
      const int64_t valid = l.n - n0 - 16 * j;
      if (valid <= 0) break;
      const __mmask16 mask = tail_mask(valid);
      __m512 v =
          _mm512_add_ps(_mm512_load_ps(sums + 256 * j + 16 * r), _mm512_loadu_ps(bias + 16 * j));
      v = Zmm::clamp(v, lo, hi);
      if (e.accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, row + 16 * j), v);
      _mm512_mask_storeu_ps(row + 16 * j, mask, v);
    }
  }
}

// Panels outer and row blocks inner, so that a call of many rows reads each panel from memory once.
void run(const Layout& l, const uint8_t* packed, const Lhs& lhs, int64_t m0, int64_t m1, int64_t p0,
         int64_t p1, float* y, int64_t ldy, kernels::Epilogue e, float* partial) {
  if (l.element != Element::bf16 || l.steps % kTileSteps != 0 || m1 - m0 < kMinRows)
    return kAvx512Bf16Kernel.run(l, packed, lhs, m0, m1, p0, p1, y, ldy, e, partial);
  alignas(64) float sums[kColumnTiles * kTileRows * 16];
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* panel = panel_at(packed, l, p);
    for (int64_t m = m0; m < m1; m += kTileRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kTileRows, m1 - m));
      configure(rows);
      panel_rows(l, panel, lhs, m, sums);
      epilogue(l, panel, sums, m, rows, p * l.nr, y, ldy, e);
    }
  }
}

// The activations as bf16 pairs, as the AVX512-BF16 kernel prepares them.
int64_t prepare(const Layout& l, int64_t m0, int64_t m1, const Lhs& lhs) {
  return kAvx512Bf16Kernel.prepare(l, m0, m1, lhs);
}

// amx_tile is set only where the OS saves tile state and granted this process its use.
bool supported(const CpuFeatures& f) {
  return f.amx_tile && f.amx_bf16 && f.avx512f && f.avx512_bf16;
}

}  // namespace

extern const Kernel kAmxBf16Kernel = {
    "amx_bf16",
    "bf16_bf16_f32_amxbf16_16x64",
    "amx_tile+amx_bf16 with the OS's tile permission, avx512_bf16",
    Zmm::kNr,
    false,
    true,
    supported,
    prepare,
    run};

}  // namespace dq4::dense
