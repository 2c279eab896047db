#pragma once
// The tiling every SIMD dense variant shares, written once over a vector type V and an
// accumulation policy P; each ISA translation unit instantiates it with its own target flags
// (everything here has internal linkage, so one ISA's copy can never be linked into another's).
//
// V provides: Reg, kLanes, kBytes (= 4 kLanes), zero(), set1(float), load(const float*),
//   store(float*, Reg), load_n / store_n (first n lanes), fma(a, b, c) = a*b + c rounded once,
//   add, clamp(y, lo, hi) = min(max(y, lo), hi) in the reference's (y > lo ? y : lo) sense,
//   raw(const uint8_t*) (an aligned load of kLanes dwords), bf16_even(raw) (low halves widened),
//   bf16_odd(raw) (high halves widened), prefetch(const uint8_t*), and the tile shapes
//   kDecodeRows x kDecodeVectors (the whole panel: kDecodeVectors = nr / kLanes),
//   kStreamRows x kStreamVectors (taller and narrower, for calls of more than kDecodeRows rows
//   that still stream each panel once; kStreamRows = kDecodeRows where the registers allow none)
//   and kPrefillRows x kPrefillVectors; calls of up to kBatchRows rows run kStream tiles over
//   the whole K (prefetch_l2(const uint8_t*) asks for the next panel in L2).
// P provides accumulate<MR, NV, kPrefetch>(lhs, m, w, step_bytes, panel_bytes, k0, k1, acc):
//   acc[r][j] += rows m + r of x times the columns of vector j (vector_at), over k0..k1 (k0 a
//   multiple of 2).

#include <algorithm>
#include <cstdint>

#include "kernel.h"

namespace dq4::dense {
namespace {

// Decode streams each weight byte from DRAM once: prefetching this far ahead keeps enough lines
// in flight for one core to approach the memory bandwidth.
constexpr int64_t kPrefetchBytes = 4096;
// Prefill works on blocks of K whose weight slice (a panel's columns) stays in L1 while every
// row tile of the block reads it; partial sums wait in y (or, accumulating into y, in scratch)
// between blocks (f32, so exact). Panels
// outer, blocks inner: the panel's rows of y stay in L1 from block to block (blocks outer sent
// all of y through the caches once per block: 8 MB per block for the 1B head at 16 rows).
constexpr int64_t kBlockBytes = 32 * 1024;

// Vector j of a tile at w: vectors run across a panel's columns and on into the next panel's
// (decode of one row keeps two panels in flight: twice the independent FMA chains).
template <class V>
DQ4_DENSE_INLINE const uint8_t* vector_at(const uint8_t* w, int64_t panel_bytes, int j) {
  return w + j / V::kDecodeVectors * panel_bytes + V::kBytes * (j % V::kDecodeVectors);
}

// What a tile prefetches while it computes: nothing (its weights are in L1/L2), its own weights
// kPrefetchBytes ahead (the tile that reads them first from memory), or the next block's weights
// at the same k (a later row tile of a prefill block, so that the next block's first tile finds
// them in the caches: with few rows, streaming in the first tile alone leaves it waiting on
// memory; past a panel's last block this lands near the start of the next panel).
enum class Prefetch { none, ahead, next_block, next_panel };

template <class V, int NV, Prefetch kPrefetch>
DQ4_DENSE_INLINE void prefetch_step(const uint8_t* w, int64_t panel_bytes) {
  constexpr int kPanelStep = V::kDecodeVectors * V::kBytes;  // a whole panel's step
  if constexpr (kPrefetch == Prefetch::ahead) {
    // A tile narrower than the panel reads part of each step: the same lead in its own bytes.
    constexpr int64_t kAhead = kPrefetchBytes * std::max(1, V::kDecodeVectors / NV);
#pragma GCC unroll 8
    for (int off = 0; off < NV * V::kBytes; off += 64)
      V::prefetch(w + off / kPanelStep * panel_bytes + kAhead + off % kPanelStep);
  } else if constexpr (kPrefetch == Prefetch::next_block) {
#pragma GCC unroll 8
    for (int off = 0; off < NV * V::kBytes; off += 64) V::prefetch(w + kBlockBytes + off);
  } else if constexpr (kPrefetch == Prefetch::next_panel) {
#pragma GCC unroll 8
    for (int off = 0; off < NV * V::kBytes; off += 64) V::prefetch_l2(w + panel_bytes + off);
  }
}

// The exact math with bf16 weights: per step, k (low halves) then k + 1 (high halves).
template <class V>
struct ExactBf16 {
  template <int MR, int NV, Prefetch kPrefetch>
  static DQ4_DENSE_INLINE void accumulate(const Lhs& lhs, int64_t m, const uint8_t* w,
                                          int64_t step_bytes, int64_t panel_bytes, int64_t k0,
                                          int64_t k1, typename V::Reg (&acc)[MR][NV]) {
    const float* x[MR];
    for (int r = 0; r < MR; ++r) x[r] = lhs.x + (m + r) * lhs.ldx;
    int64_t k = k0;
    for (; k + 2 <= k1; k += 2, w += step_bytes) {
      prefetch_step<V, NV, kPrefetch>(w, panel_bytes);
      if constexpr (MR * (NV + 2) <= 24) {  // every row's broadcasts fit beside the sums
        typename V::Reg a[MR], b[MR];
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
          a[r] = V::set1(x[r][k]);
          b[r] = V::set1(x[r][k + 1]);
        }
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) {
          const typename V::Reg raw = V::raw(vector_at<V>(w, panel_bytes, j));
          const typename V::Reg even = V::bf16_even(raw), odd = V::bf16_odd(raw);
#pragma GCC unroll 8
          for (int r = 0; r < MR; ++r) {
            acc[r][j] = V::fma(even, a[r], acc[r][j]);
            acc[r][j] = V::fma(odd, b[r], acc[r][j]);
          }
        }
      } else {  // row by row: a row's two broadcasts, then its sums
        typename V::Reg even[NV], odd[NV];
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) {
          const typename V::Reg raw = V::raw(vector_at<V>(w, panel_bytes, j));
          even[j] = V::bf16_even(raw);
          odd[j] = V::bf16_odd(raw);
        }
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
          const typename V::Reg a = V::set1(x[r][k]), b = V::set1(x[r][k + 1]);
#pragma GCC unroll 8
          for (int j = 0; j < NV; ++j) {
            acc[r][j] = V::fma(even[j], a, acc[r][j]);
            acc[r][j] = V::fma(odd[j], b, acc[r][j]);
          }
        }
      }
    }
    if (k < k1) {  // K odd: the last step's k only
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) {
        const typename V::Reg even = V::bf16_even(V::raw(vector_at<V>(w, panel_bytes, j)));
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) acc[r][j] = V::fma(even, V::set1(x[r][k]), acc[r][j]);
      }
    }
  }
};

// The exact math with f32 weights: one k per step.
template <class V>
struct ExactF32 {
  template <int MR, int NV, Prefetch kPrefetch>
  static DQ4_DENSE_INLINE void accumulate(const Lhs& lhs, int64_t m, const uint8_t* w,
                                          int64_t step_bytes, int64_t panel_bytes, int64_t k0,
                                          int64_t k1, typename V::Reg (&acc)[MR][NV]) {
    const float* x[MR];
    for (int r = 0; r < MR; ++r) x[r] = lhs.x + (m + r) * lhs.ldx;
    for (int64_t k = k0; k < k1; ++k, w += step_bytes) {
      prefetch_step<V, NV, kPrefetch>(w, panel_bytes);
      typename V::Reg a[MR];
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) a[r] = V::set1(x[r][k]);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) {
        const typename V::Reg v = V::raw(vector_at<V>(w, panel_bytes, j));
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) acc[r][j] = V::fma(v, a[r], acc[r][j]);
      }
    }
  }
};

// Where a run's sums go: the outputs to y (row stride ldy) as the epilogue says, and the partial
// sums between K blocks to y as well or, when accumulating into y (which holds what the outputs
// are added to), to `partial`: nr floats for each row from m0 on.
struct Target {
  float* y;
  int64_t ldy;
  kernels::Epilogue epilogue;
  float* partial;
  int64_t m0, nr;

  // Row m's partial sums from column n0 + c0 (n0: a panel's first column).
  DQ4_DENSE_INLINE float* partial_row(int64_t m, int64_t n0, int64_t c0) const {
    return partial == nullptr ? y + m * ldy + n0 + c0 : partial + (m - m0) * nr + c0;
  }
};

// Rows m..m+MR-1 x columns c0 .. c0 + NV kLanes from the panel at `panel` (first column n0; NV
// may span the next panel too), over k0..k1: starts from 0 (k0 = 0) or the partial sums, ends
// with bias, clamp and the epilogue's store (k1 = K) or else with the partial sums.
template <class V, class P, int MR, int NV, Prefetch kPrefetch>
void tile(const Layout& l, const uint8_t* panel, int64_t c0, const Lhs& lhs, int64_t m,
          const Target& out, int64_t n0, int64_t k0, int64_t k1) {
  using Reg = typename V::Reg;
  constexpr int L = V::kLanes;
  const int64_t valid = l.n - n0 - c0;  // columns of the tile that exist (may exceed NV L)
  Reg acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    const float* row = k0 == 0 ? nullptr : out.partial_row(m + r, n0, c0);
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      if (k0 == 0 || valid <= L * j)
        acc[r][j] = V::zero();
      else if (valid >= L * (j + 1))
        acc[r][j] = V::load(row + L * j);
      else
        acc[r][j] = V::load_n(row + L * j, static_cast<int>(valid - L * j));
    }
  }
  P::template accumulate<MR, NV, kPrefetch>(lhs, m, panel + c0 * 4 + k0 / l.step_k() * l.step_bytes,
                                            l.step_bytes, l.panel_bytes, k0, k1, acc);
  const bool last = k1 == l.k;
  const bool add = last && out.epilogue.accumulate;
  const Reg vlo = V::set1(out.epilogue.lo), vhi = V::set1(out.epilogue.hi);
  for (int r = 0; r < MR; ++r) {
    float* row = last ? out.y + (m + r) * out.ldy + n0 + c0 : out.partial_row(m + r, n0, c0);
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      if (valid <= L * j) break;
      const float* bias = panel_bias(vector_at<V>(panel, l.panel_bytes, j), l) + c0;
      Reg v = last ? V::clamp(V::add(acc[r][j], V::load(bias)), vlo, vhi) : acc[r][j];
      if (valid >= L * (j + 1)) {
        if (add) v = V::add(V::load(row + L * j), v);
        V::store(row + L * j, v);
      } else {
        const int n = static_cast<int>(valid - L * j);
        if (add) v = V::add(V::load_n(row + L * j, n), v);
        V::store_n(row + L * j, v, n);
      }
    }
  }
}

// tile<rows, NV> over the columns of one panel, for a run-time rows in 1..Rows.
template <class V, class P, int Rows, int NV, Prefetch kPrefetch>
void tile_rows(const Layout& l, const uint8_t* panel, const Lhs& lhs, int64_t m, int64_t rows,
               const Target& out, int64_t n0, int64_t k0, int64_t k1) {
  if constexpr (Rows > 0) {
    if (rows != Rows)
      return tile_rows<V, P, Rows - 1, NV, kPrefetch>(l, panel, lhs, m, rows, out, n0, k0, k1);
    for (int64_t c0 = 0; c0 < l.nr && n0 + c0 < l.n; c0 += NV * V::kLanes)
      tile<V, P, Rows, NV, kPrefetch>(l, panel, c0, lhs, m, out, n0, k0, k1);
  }
}

template <class V, class P>
void run_panels(const Layout& l, const uint8_t* packed, const Lhs& lhs, int64_t m0, int64_t m1,
                int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue e,
                float* partial) {
  const Target out{y, ldy, e, e.accumulate ? partial : nullptr, m0, l.nr};
  const int64_t rows = m1 - m0;
  if (rows <= V::kStreamRows) {  // decode: one pass over each panel, streamed from memory
    int64_t p = p0;
    if (rows == 1)  // one row: two panels at a time, so that enough FMA chains overlap
      for (; p + 2 <= p1; p += 2)
        tile<V, P, 1, 2 * V::kDecodeVectors, Prefetch::ahead>(l, panel_at(packed, l, p), 0, lhs, m0,
                                                              out, p * l.nr, 0, l.k);
    for (; p < p1; ++p) {
      // A verified draft or a small batch (a few rows past kDecodeRows) in narrower tiles of all
      // its rows: the weights stay one stream from memory where K blocks would read each block
      // from memory for the first tile and from L1 for the rest, every row's FMAs behind the read.
      if (rows <= V::kDecodeRows)
        tile_rows<V, P, V::kDecodeRows, V::kDecodeVectors, Prefetch::ahead>(
            l, panel_at(packed, l, p), lhs, m0, rows, out, p * l.nr, 0, l.k);
      else if constexpr (V::kStreamRows > V::kDecodeRows)
        tile_rows<V, P, V::kStreamRows, V::kStreamVectors, Prefetch::ahead>(
            l, panel_at(packed, l, p), lhs, m0, rows, out, p * l.nr, 0, l.k);
    }
    return;
  }
  if constexpr (V::kBatchRows > V::kStreamRows) {
    if (rows <= V::kBatchRows) {
      // A batch of decode rows: every row tile runs the whole K of a panel from L2 while asking
      // for the next panel there, so that reading the weights overlaps the arithmetic instead of
      // preceding it in each K block's first tile.
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t m = m0; m < m1; m += V::kStreamRows)
          tile_rows<V, P, V::kStreamRows, V::kStreamVectors, Prefetch::next_panel>(
              l, panel_at(packed, l, p), lhs, m, std::min<int64_t>(V::kStreamRows, m1 - m), out,
              p * l.nr, 0, l.k);
      return;
    }
  }
  const int64_t element_bytes = l.element == Element::bf16 ? 2 : 4;
  const int64_t block = std::max<int64_t>(2, kBlockBytes / (l.nr * element_bytes) / 2 * 2);
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* panel = panel_at(packed, l, p);
    for (int64_t k0 = 0; k0 < l.k; k0 += block) {
      const int64_t k1 = std::min(l.k, k0 + block);
      for (int64_t m = m0; m < m1; m += V::kPrefillRows) {
        const int64_t rows = std::min<int64_t>(V::kPrefillRows, m1 - m);
        if (m == m0)
          tile_rows<V, P, V::kPrefillRows, V::kPrefillVectors, Prefetch::ahead>(
              l, panel, lhs, m, rows, out, p * l.nr, k0, k1);
        else if (m == m0 + V::kPrefillRows)
          tile_rows<V, P, V::kPrefillRows, V::kPrefillVectors, Prefetch::next_block>(
              l, panel, lhs, m, rows, out, p * l.nr, k0, k1);
        else
          tile_rows<V, P, V::kPrefillRows, V::kPrefillVectors, Prefetch::none>(
              l, panel, lhs, m, rows, out, p * l.nr, k0, k1);
      }
    }
  }
}

// The exact math for either element type.
template <class V>
void run_exact(const Layout& l, const uint8_t* packed, const Lhs& lhs, int64_t m0, int64_t m1,
               int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue e, float* partial) {
  if (l.element == Element::bf16)
    run_panels<V, ExactBf16<V>>(l, packed, lhs, m0, m1, p0, p1, y, ldy, e, partial);
  else
    run_panels<V, ExactF32<V>>(l, packed, lhs, m0, m1, p0, p1, y, ldy, e, partial);
}

}  // namespace
}  // namespace dq4::dense
