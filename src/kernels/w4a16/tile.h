#pragma once
// The W4A16 kernel body shared by the SIMD variants; each includes this header in its own
// translation unit (compiled with its own target flags) and supplies the vector operations as
// `Isa` (see x86_avx512f.cc for the list). Lanes are output columns: per row, every lane runs the
// reference's chain acc = fma(x[k], float(q[k]), acc) over the group's k in order, then
// out = fma(acc, scale, out), so results are bit-identical to reference.cc.
//
// A tile is MR rows x NV vectors of columns (whole panels, or a part of one). Each step of 8 k
// loads the nibble dwords once and dequantizes each of its 8 planes once for all MR rows.
// Decode-sized calls (at most kDecodeRows rows) stream every panel once from memory, several
// panels at a time so that enough independent FMA chains hide the FMA latency; larger calls
// re-read each panel from L2 in tiles of Isa::kPrefillRows rows x Isa::kPrefillVectors vectors,
// tall so that each dequantized vector feeds many FMAs.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernel.h"

namespace dq4::w4a16 {
// Internal linkage on purpose: each ISA translation unit gets its own copy, compiled with its own
// target flags, so the linker can never hand one variant's code to another.
namespace {

constexpr int kDecodeRows = 6;
constexpr int kStepK = 8;

// Bit offset of the nibble holding k + i of a step within its column's dword (layout.h).
constexpr int nibble_shift(int i) { return i < 4 ? 8 * i : 8 * (i - 4) + 4; }

template <int I, class Body>
DQ4_ALWAYS_INLINE void unrolled_steps(Body&& body) {
  if constexpr (I < kStepK) {
    body(std::integral_constant<int, I>());
    unrolled_steps<I + 1>(body);
  }
}

template <class Isa>
DQ4_ALWAYS_INLINE typename Isa::F dequant_at(typename Isa::I raw, int i) {
  switch (i) {
    case 0:
      return Isa::template dequant<0>(raw);
    case 1:
      return Isa::template dequant<1>(raw);
    case 2:
      return Isa::template dequant<2>(raw);
    case 3:
      return Isa::template dequant<3>(raw);
    case 4:
      return Isa::template dequant<4>(raw);
    case 5:
      return Isa::template dequant<5>(raw);
    default:
      return Isa::template dequant<6>(raw);  // a partial step has at most 7 k
  }
}

// Rows m..m+MR-1 x NV vectors of columns from vector j0 of panel p on (spanning panels when NV
// exceeds a panel).
template <class Isa, int MR, int NV, bool kStream>
void tile(const Layout& l, const uint8_t* packed, int64_t p, int j0, const float* x, int64_t ldx,
          int64_t m, float* y, int64_t ldy, kernels::Epilogue e) {
  using F = typename Isa::F;
  using I = typename Isa::I;
  constexpr int kLanes = Isa::kLanes;
  constexpr int kPanelVectors = Isa::kNr / kLanes;
  constexpr int NP = (NV + kPanelVectors - 1) / kPanelVectors;
  PanelView panel[NP];
#pragma GCC unroll 24
  for (int j = 0; j < NP; ++j) panel[j] = panel_view(packed, l, p + j);
  const float* row[MR];
#pragma GCC unroll 24
  for (int r = 0; r < MR; ++r) row[r] = x + (m + r) * ldx;
  // The across-group sums stay in memory (L1): registers hold the group's accumulators.
  alignas(64) float out[MR][NV * kLanes] = {};

  for (int64_t g = 0; g < l.groups; ++g) {
    F acc[MR][NV];
#pragma GCC unroll 24
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 24
      for (int v = 0; v < NV; ++v) acc[r][v] = Isa::zero();
    const uint8_t* w[NV];
#pragma GCC unroll 24
    for (int v = 0; v < NV; ++v)
      w[v] = panel[(j0 + v) / kPanelVectors].group_data(g) + (j0 + v) % kPanelVectors * kLanes * 4;
    const int64_t k0 = l.group_begin(g), count = group_k_count(l, g);
    const int64_t full_steps = count / kStepK;
    for (int64_t s = 0; s < full_steps; ++s) {
      I raw[NV];
#pragma GCC unroll 24
      for (int v = 0; v < NV; ++v) {
        const uint8_t* src = w[v] + s * l.step_bytes;
        if constexpr (kStream) Isa::prefetch(src);
        raw[v] = Isa::load_step(src);
      }
      const int64_t k = k0 + s * kStepK;
      unrolled_steps<0>([&](auto i) {
#pragma GCC unroll 24
        for (int v = 0; v < NV; ++v) {
          const F wv = Isa::template dequant<decltype(i)::value>(raw[v]);
#pragma GCC unroll 24
          for (int r = 0; r < MR; ++r)
            acc[r][v] = Isa::fma(Isa::broadcast(row[r] + k + i), wv, acc[r][v]);
        }
      });
    }
    if (const int64_t rest = count - full_steps * kStepK; rest > 0) {  // the last group's tail
      I raw[NV];
#pragma GCC unroll 24
      for (int v = 0; v < NV; ++v) raw[v] = Isa::load_step(w[v] + full_steps * l.step_bytes);
      const int64_t k = k0 + full_steps * kStepK;
      for (int i = 0; i < rest; ++i)
#pragma GCC unroll 24
        for (int v = 0; v < NV; ++v) {
          const F wv = dequant_at<Isa>(raw[v], i);
#pragma GCC unroll 24
          for (int r = 0; r < MR; ++r)
            acc[r][v] = Isa::fma(Isa::broadcast(row[r] + k + i), wv, acc[r][v]);
        }
    }
#pragma GCC unroll 24
    for (int v = 0; v < NV; ++v) {
      const PanelView& pv = panel[(j0 + v) / kPanelVectors];
      const int64_t c0 = (j0 + v) % kPanelVectors * kLanes;
      const F scale = l.channelwise ? Isa::loadu(pv.scales() + c0)
                      : l.group_scales == GroupScales::f32
                          ? Isa::loadu(pv.group_scales_f32(g) + c0)
                          : Isa::load_bf16(pv.group_scales(g) + c0);
#pragma GCC unroll 24
      for (int r = 0; r < MR; ++r)
        Isa::store(out[r] + v * kLanes, Isa::fma(acc[r][v], scale, Isa::load(out[r] + v * kLanes)));
    }
  }

  const F vlo = Isa::set1(e.lo), vhi = Isa::set1(e.hi);
#pragma GCC unroll 24
  for (int v = 0; v < NV; ++v) {
    const int64_t c0 = (j0 + v) % kPanelVectors * kLanes;
    const int64_t n0 = (p + (j0 + v) / kPanelVectors) * l.nr + c0;
    const int64_t valid = l.n - n0;  // columns of this vector that exist
    if (valid <= 0) continue;
    const F bias = Isa::loadu(panel[(j0 + v) / kPanelVectors].bias() + c0);
#pragma GCC unroll 24
    for (int r = 0; r < MR; ++r) {
      float* dst = y + (m + r) * ldy + n0;
      F yv = Isa::clamp(Isa::add(Isa::load(out[r] + v * kLanes), bias), vlo, vhi);
      if (e.accumulate) {
        if (valid >= kLanes) {
          yv = Isa::add(Isa::loadu(dst), yv);
        } else {
          alignas(64) float lanes[kLanes] = {};
          std::memcpy(lanes, dst, static_cast<size_t>(valid) * sizeof(float));
          yv = Isa::add(Isa::load(lanes), yv);
        }
      }
      Isa::store_columns(dst, yv, valid);
    }
  }
}

// body(std::integral_constant<int, rows>()) for a run-time rows in 1..MR.
template <int MR, class Body>
DQ4_ALWAYS_INLINE void with_rows(int64_t rows, Body&& body) {
  if constexpr (MR > 1) {
    if (rows != MR) return with_rows<MR - 1>(rows, body);
  }
  body(std::integral_constant<int, MR>());
}

template <class Isa>
void run(const Layout& l, const uint8_t* packed, const float* x, int64_t ldx, int64_t m0,
         int64_t m1, int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue e) {
  constexpr int kPanelVectors = Isa::kNr / Isa::kLanes;
  const int64_t rows = m1 - m0;
  if (rows <= kDecodeRows) {  // decode: one pass over the weights streamed from memory
    with_rows<kDecodeRows>(rows, [&](auto mr) {
      constexpr int MR = decltype(mr)::value;
      constexpr int NP = Isa::decode_panels(MR);
      int64_t p = p0;
      if constexpr (NP > 1)
        for (; p + NP <= p1; p += NP)
          tile<Isa, MR, NP * kPanelVectors, true>(l, packed, p, 0, x, ldx, m0, y, ldy, e);
      for (; p < p1; ++p)
        tile<Isa, MR, kPanelVectors, true>(l, packed, p, 0, x, ldx, m0, y, ldy, e);
    });
    return;
  }
  // prefill: row tiles re-read the panel from L2
  constexpr int kRows = Isa::kPrefillRows, kVectors = Isa::kPrefillVectors;
  static_assert(kPanelVectors % kVectors == 0);
  for (int64_t p = p0; p < p1; ++p)
    for (int j0 = 0; j0 < kPanelVectors && p * l.nr + j0 * Isa::kLanes < l.n; j0 += kVectors)
      for (int64_t m = m0; m < m1; m += kRows)
        with_rows<kRows>(std::min<int64_t>(kRows, m1 - m), [&](auto mr) {
          tile<Isa, decltype(mr)::value, kVectors, false>(l, packed, p, j0, x, ldx, m, y, ldy, e);
        });
}

}  // namespace
}  // namespace dq4::w4a16
