#pragma once
// The W4A8 tile code of the AVX512-VNNI variants: 64-column panels (4 zmm), VPDPBUSD with the
// unsigned nibble planes as the u8 operand and a broadcast dword of 4 activations as the s8
// operand. Sum a*u = sum a*q + 8 sum a, so the group's activation sum (computed while quantizing)
// removes the +8 offset exactly. The variants differ in how they order the tiles of a call (the
// cores differ in which ports the unpack shares with VPDPBUSD). Included only by files compiled
// with -mavx512f -mavx512bw -mavx512vl -mavx512vnni.

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernel.h"
#include "qai8dx.h"

namespace dq4::w4a8 {
// Internal linkage on purpose: each ISA translation unit gets its own copy, compiled with its own
// target flags, so the linker can never hand one variant's code to the other.
namespace {
namespace zmm {

constexpr int kNr = 64;
constexpr int kVectors = kNr / 16;
// Up to kStreamedRows rows run one tile (unpacking in its loop) that streams the panel: 5 rows (a
// draft of four verified with its last token) make 20 accumulators, and a step's 8 nibble planes
// still fit the 32 registers.
constexpr int kStreamedRows = 5;

// ---- activation quantization --------------------------------------------------------------

// round(v) with ties away from zero, as an integer: v + (the float just below 0.5, with v's sign),
// rounded to nearest even by the add, then truncated. Exact for every float: below 0.5 from an
// integer the sum stays below the next one; at 0.5 exactly it rounds up to it.
inline __m512i round_half_away(__m512 v) {
  const __m512i below_half = _mm512_ternarylogic_epi32(  // (v & sign) | 0x3effffff
      _mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN), _mm512_set1_epi32(0x3effffff), 0xEA);
  return _mm512_cvttps_epi32(_mm512_add_ps(v, _mm512_castsi512_ps(below_half)));
}

inline __mmask16 tail_mask(int64_t remaining) {
  return remaining >= 16 ? __mmask16(0xffff) : __mmask16((1u << remaining) - 1);
}

// The row's min and max with 0 (which row_quant_params adds anyway, so the lanes past k, loaded as
// 0, change nothing), and whether it holds a NaN or an infinity (v * 0 is NaN only for those).
// Four independent sets, so that the min/max latency does not bound the loop.
inline bool row_range(const float* row, int64_t k, float* row_min, float* row_max) {
  __m512 vmin[4], vmax[4], nan_if_bad[4];
  for (int i = 0; i < 4; ++i) vmin[i] = vmax[i] = nan_if_bad[i] = _mm512_setzero_ps();
  const __m512 zero = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 64 <= k; j += 64)
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const __m512 v = _mm512_loadu_ps(row + j + 16 * i);
      vmin[i] = _mm512_min_ps(vmin[i], v);
      vmax[i] = _mm512_max_ps(vmax[i], v);
      nan_if_bad[i] = _mm512_fmadd_ps(v, zero, nan_if_bad[i]);
    }
  for (; j < k; j += 16) {
    const __m512 v = _mm512_maskz_loadu_ps(tail_mask(k - j), row + j);
    vmin[0] = _mm512_min_ps(vmin[0], v);
    vmax[0] = _mm512_max_ps(vmax[0], v);
    nan_if_bad[0] = _mm512_fmadd_ps(v, zero, nan_if_bad[0]);
  }
  const __m512 bad = _mm512_add_ps(_mm512_add_ps(nan_if_bad[0], nan_if_bad[1]),
                                   _mm512_add_ps(nan_if_bad[2], nan_if_bad[3]));
  if (_mm512_cmp_ps_mask(bad, bad, _CMP_UNORD_Q) != 0) return false;
  *row_min = _mm512_reduce_min_ps(
      _mm512_min_ps(_mm512_min_ps(vmin[0], vmin[1]), _mm512_min_ps(vmin[2], vmin[3])));
  *row_max = _mm512_reduce_max_ps(
      _mm512_max_ps(_mm512_max_ps(vmax[0], vmax[1]), _mm512_max_ps(vmax[2], vmax[3])));
  return true;
}

// 64 values from x[0..) quantized to int8 in k order, those from `valid` on (< 64) zero: rounded
// as int32, narrowed to int16 (exact: |round(v * mul)| <= 256), the zero point added in int16
// (exact), then narrowed to int8 with saturation, which is the clamp to [-128, 127]. The packs
// interleave 128-bit lanes; one dword permutation restores k order. One bit per value masks both
// the loads (16 bits per vector) and the int8 result.
inline __m512i quantize64(const float* x, int64_t valid, __m512 mul, __m512i zp16) {
  const uint64_t present = valid >= 64 ? ~0ull : ~0ull >> (64 - valid);
  __m512i r[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const __m512 v = valid >= 64
                         ? _mm512_loadu_ps(x + 16 * i)
                         : _mm512_maskz_loadu_ps(__mmask16(present >> (16 * i)), x + 16 * i);
    r[i] = round_half_away(_mm512_mul_ps(v, mul));
  }
  const __m512i low = _mm512_adds_epi16(_mm512_packs_epi32(r[0], r[1]), zp16);
  const __m512i high = _mm512_adds_epi16(_mm512_packs_epi32(r[2], r[3]), zp16);
  const __m512i lanes = _mm512_packs_epi16(low, high);
  const __m512i q = _mm512_permutexvar_epi32(
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), lanes);
  return valid >= 64 ? q : _mm512_maskz_mov_epi8(_cvtu64_mask64(present), q);
}

// The sums of the two 32-value blocks of q (int8), in dwords 0 and 1.
inline __m128i block_sums(__m512i q) {
  __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), q);
  s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, _MM_PERM_BADC));
  s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, _MM_PERM_CDAB));  // 128-bit lane sums
  s = _mm512_add_epi32(s, _mm512_shuffle_i32x4(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_castsi512_si128(_mm512_permutexvar_epi32(_mm512_set1_epi64(int64_t{8} << 32), s));
}

inline int64_t quantize(const float* x, int64_t ldx, int64_t m0, int64_t m1, const Layout& l,
                        const QuantizedLhs& lhs) {
  for (int64_t m = m0; m < m1; ++m) {
    const float* row = x + m * ldx;
    float row_min, row_max;
    if (!row_range(row, l.k, &row_min, &row_max)) return m;
    const RowQuantParams p = row_quant_params(row_min, row_max);
    const __m512 mul = _mm512_set1_ps(p.mul);
    const __m512i zp16 = _mm512_set1_epi16(static_cast<int16_t>(p.zp));
    int8_t* q = lhs.q + m * lhs.ldq;
    int32_t* sums = lhs.asum + m * lhs.groups;
    // kp is a multiple of 32 and each block of 32 is a group (or the only one, k <= 32).
    for (int64_t k = 0; k < l.kp; k += 64) {
      const __m512i values = quantize64(row + k, l.k - k, mul, zp16);
      const __m128i block = block_sums(values);
      if (l.kp - k >= 64) {
        _mm512_storeu_si512(q + k, values);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(sums + k / 32), block);
      } else {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + k), _mm512_castsi512_si256(values));
        sums[k / 32] = _mm_cvtsi128_si32(block);
      }
    }
    lhs.recip[m] = p.recip;
    lhs.zp[m] = p.zp;
  }
  return -1;
}

// ---- matmul ---------------------------------------------------------------------------------

inline int32_t load_dword(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Integer dot products init(r, j) + sum(a * u) of MR rows with NV x 16 columns of the panel (from
// column 16 * j0) over `steps` steps of 8 k from k0, handed to finish(r, j, sums of columns
// 16j..16j+15) while still in registers. With one row the two nibble planes get separate
// accumulators to hide VPDPBUSD latency; with more, every row's low-plane products come before the
// high plane's, so that consecutive VPDPBUSDs never feed the same accumulator. kSteps > 0 fixes the
// step count at compile time (full groups of 32/64/128) so that the loop unrolls and the
// accumulators stay put in registers. kUnpacked: w points into unpack_panel's planes instead of the
// packed nibbles. kAhead > 0: prefetch the nibbles that many bytes ahead (a tile that streams the
// panel from memory).
template <int MR, int NV, int kAhead, int kSteps = 0, bool kUnpacked = false, class Init,
          class Finish>
__attribute__((always_inline)) inline void dot_steps(const uint8_t* w, int64_t steps,
                                                     const int8_t* const* q, int64_t k0,
                                                     Init&& init, Finish&& finish) {
  const __m512i low_mask = _mm512_set1_epi8(0x0f);
  constexpr int kPlanes = MR == 1 ? 2 : 1;
  __m512i acc[kPlanes][MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      acc[0][r][j] = init(r, j);
      if constexpr (kPlanes == 2) acc[1][r][j] = _mm512_setzero_si512();
    }
  if constexpr (kSteps > 0) steps = kSteps;
#pragma GCC unroll 16
  for (int64_t s = 0; s < steps; ++s, w += kUnpacked ? kNr * 8 : kNr * 4) {
    __m512i lo[NV], hi[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      if constexpr (kUnpacked) {
        lo[j] = _mm512_load_si512(w + 64 * j);
        hi[j] = _mm512_load_si512(w + kNr * 4 + 64 * j);
      } else {
        if constexpr (kAhead > 0)
          _mm_prefetch(reinterpret_cast<const char*>(w + kAhead + 64 * j), _MM_HINT_T0);
        const __m512i raw = _mm512_load_si512(w + 64 * j);
        lo[j] = _mm512_and_si512(raw, low_mask);
        hi[j] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low_mask);
      }
    }
    const int64_t k = k0 + s * 8;
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512i a_lo = _mm512_set1_epi32(load_dword(q[r] + k));
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[0][r][j] = _mm512_dpbusd_epi32(acc[0][r][j], lo[j], a_lo);
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512i a_hi = _mm512_set1_epi32(load_dword(q[r] + k + 4));
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j)
        acc[kPlanes - 1][r][j] = _mm512_dpbusd_epi32(acc[kPlanes - 1][r][j], hi[j], a_hi);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      __m512i sum = acc[0][r][j];
      if constexpr (kPlanes == 2) sum = _mm512_add_epi32(sum, acc[1][r][j]);
      finish(r, j, sum);
    }
}

inline __m512 clamp(__m512 y, __m512 lo, __m512 hi) {
  return _mm512_min_ps(_mm512_max_ps(y, lo), hi);  // (y > lo ? y : lo), then (y < hi ? y : hi)
}

// A tile's running sums between parts of K, 64-byte aligned, `ld` elements from one row to the
// next, column c0 of the tile first: per row and column sum a*q so far (int32) when channelwise,
// the group sums times their scales so far (f32) when groupwise.
struct TileSums {
  void* data;
  int64_t ld;
  int32_t* ints(int r, int j) const { return static_cast<int32_t*>(data) + r * ld + 16 * j; }
  float* floats(int r, int j) const { return static_cast<float*>(data) + r * ld + 16 * j; }
};

// Adds the products of rows m..m+MR-1 with columns c0..c0+16NV of one panel over one part of K
// to `sums`: steps [part0, part1) of 8 k when channelwise, groups [part0, part1) when groupwise.
// `first`: the sums start here (from -8 sum a, which turns sum a*u into sum a*q, or from 0).
template <int MR, int NV, int kAhead, bool kUnpacked>
void accumulate(const Layout& l, const PanelView& panel, const uint8_t* unpacked,
                const QuantizedLhs& lhs, int64_t m, int64_t c0, int64_t part0, int64_t part1,
                bool first, const TileSums& sums) {
  const int8_t* q[MR];
  for (int r = 0; r < MR; ++r) q[r] = lhs.q + (m + r) * lhs.ldq;
  if (l.channelwise) {
    const int64_t offset = kUnpacked ? part0 * kNr * 8 : part0 * l.step_bytes;
    dot_steps<MR, NV, kAhead, 0, kUnpacked>(
        (kUnpacked ? unpacked : panel.group_data(0)) + offset + 4 * c0, part1 - part0, q, 8 * part0,
        [&](int r, int j) {
          return first ? _mm512_set1_epi32(-8 * lhs.asum[(m + r) * lhs.groups])
                       : _mm512_load_si512(sums.ints(r, j));
        },
        [&](int r, int j, __m512i sum) { _mm512_store_si512(sums.ints(r, j), sum); });
    return;
  }
  // The f32 group accumulators: values the compiler keeps on the stack (in registers they would
  // crowd out the integer accumulators of the hot loop), not `sums`, which it would have to assume
  // every vector store may alias. Values, and the group pass inlined, because a float array
  // written through pointers, or read by an outlined pass, got every group's sums stored twice.
  __m512 facc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NV; ++j)
      facc[r][j] = first ? _mm512_setzero_ps() : _mm512_load_ps(sums.floats(r, j));
  auto group_pass = [&](int64_t g, auto fixed_steps) __attribute__((always_inline)) {
    int32_t start[MR];  // sum a*u - 8 sum a = sum a*q over the group
    for (int r = 0; r < MR; ++r) start[r] = -8 * lhs.asum[(m + r) * lhs.groups + g];
    const uint16_t* scales = panel.group_scales(g) + c0;
    // The group's bf16 scales, widened once for all rows when the first row's sums are done:
    // they follow the group's nibbles in the panel, and loaded before those, a tile streaming the
    // panel from memory would wait for them ahead of the stream.
    __m512 d[NV];
    dot_steps<MR, NV, kAhead, decltype(fixed_steps)::value, kUnpacked>(
        (kUnpacked ? unpacked + g * l.full_group_steps * kNr * 8 : panel.group_data(g)) + 4 * c0,
        l.group_steps(g), q, l.group_begin(g),
        [&](int r, int) { return _mm512_set1_epi32(start[r]); },
        [&](int r, int j, __m512i block) {
          if (r == 0)
            d[j] = _mm512_castsi512_ps(_mm512_slli_epi32(
                _mm512_cvtepu16_epi32(
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + 16 * j))),
                16));
          facc[r][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(block), d[j], facc[r][j]);
        });
  };
  const int64_t full_end = std::min(part1, l.groups - 1);  // the last group may be partial
  auto full_groups = [&](auto fixed_steps) {
    for (int64_t g = part0; g < full_end; ++g) group_pass(g, fixed_steps);
  };
  switch (l.full_group_steps) {
    case 4:
      full_groups(std::integral_constant<int, 4>());
      break;
    case 8:
      full_groups(std::integral_constant<int, 8>());
      break;
    case 16:
      full_groups(std::integral_constant<int, 16>());
      break;
    default:
      full_groups(std::integral_constant<int, 0>());
      break;
  }
  if (part1 == l.groups) group_pass(l.groups - 1, std::integral_constant<int, 0>());
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NV; ++j) _mm512_store_ps(sums.floats(r, j), facc[r][j]);
}

// Output rows m..m+MR-1, columns n0 + c0 .. + 16 NV of one panel (n0 = the panel's first) from
// the sums over the whole of K.
template <int MR, int NV>
void finish(const Layout& l, const PanelView& panel, const QuantizedLhs& lhs, int64_t m, int64_t c0,
            const TileSums& sums, float* y, int64_t ldy, int64_t n0, kernels::Epilogue e) {
  __m512 out[MR][NV];
  for (int r = 0; r < MR; ++r) {
    const __m512 recip = _mm512_set1_ps(lhs.recip[m + r]);
    for (int j = 0; j < NV; ++j) {
      if (l.channelwise) {
        const __m512i zp = _mm512_set1_epi32(lhs.zp[m + r]);
        const __m512i column_sums = _mm512_loadu_si512(panel.column_sums() + c0 + 16 * j);
        const __m512i u = _mm512_sub_epi32(_mm512_load_si512(sums.ints(r, j)),
                                           _mm512_mullo_epi32(zp, column_sums));
        const __m512 sp = _mm512_mul_ps(_mm512_loadu_ps(panel.scales() + c0 + 16 * j), recip);
        out[r][j] = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(u), sp),
                                  _mm512_loadu_ps(panel.cw_bias() + c0 + 16 * j));
      } else {
        const __m512 neg_zp = _mm512_set1_ps(static_cast<float>(-lhs.zp[m + r]));
        const __m512 acc_final = _mm512_fmadd_ps(_mm512_loadu_ps(panel.row_sums() + c0 + 16 * j),
                                                 neg_zp, _mm512_load_ps(sums.floats(r, j)));
        out[r][j] = _mm512_add_ps(_mm512_mul_ps(acc_final, recip),
                                  _mm512_loadu_ps(panel.gw_bias() + c0 + 16 * j));
      }
    }
  }
  const __m512 vlo = _mm512_set1_ps(e.lo), vhi = _mm512_set1_ps(e.hi);
  const int64_t valid = l.n - n0 - c0;  // columns of this tile that exist
  for (int r = 0; r < MR; ++r) {
    float* dst = y + (m + r) * ldy + n0 + c0;
    for (int j = 0; j < NV; ++j) {
      const __m512 v = clamp(out[r][j], vlo, vhi);
      if (valid >= 16 * (j + 1)) {
        _mm512_storeu_ps(dst + 16 * j,
                         e.accumulate ? _mm512_add_ps(_mm512_loadu_ps(dst + 16 * j), v) : v);
      } else if (valid > 16 * j) {
        const __mmask16 mask = tail_mask(valid - 16 * j);
        _mm512_mask_storeu_ps(
            dst + 16 * j, mask,
            e.accumulate ? _mm512_add_ps(_mm512_maskz_loadu_ps(mask, dst + 16 * j), v) : v);
      }
    }
  }
}

// The parts of K a layout's sums run over: steps when channelwise, groups when groupwise.
inline int64_t k_parts(const Layout& l) { return l.channelwise ? l.full_group_steps : l.groups; }

// Output rows m..m+MR-1, columns n0 + 16 j0 .. + 16 NV of one panel, all of K in one pass.
template <int MR, int NV, int kAhead, bool kUnpacked>
void tile(const Layout& l, const PanelView& panel, const uint8_t* unpacked, const QuantizedLhs& lhs,
          int64_t m, int j0, float* y, int64_t ldy, int64_t n0, kernels::Epilogue e) {
  alignas(64) int32_t buffer[MR * NV * 16];
  const TileSums sums{buffer, NV * 16};
  const int64_t c0 = 16 * j0;
  accumulate<MR, NV, kAhead, kUnpacked>(l, panel, unpacked, lhs, m, c0, 0, k_parts(l), true, sums);
  finish<MR, NV>(l, panel, lhs, m, c0, sums, y, ldy, n0, e);
}

// f(std::integral_constant<int, rows>) for a run-time rows in 1..Rows.
template <int Rows, class F>
void with_rows(int64_t rows, F&& f) {
  if constexpr (Rows > 0) {
    if (rows != Rows) return with_rows<Rows - 1>(rows, f);
    f(std::integral_constant<int, Rows>());
  }
}

// tile<rows, Vectors, ...> over the panel's columns, for a run-time rows in 1..Rows.
template <int Rows, int Vectors, int kAhead, bool kUnpacked = false>
void tile_rows(const Layout& l, const PanelView& panel, const uint8_t* unpacked,
               const QuantizedLhs& lhs, int64_t m, int64_t rows, float* y, int64_t ldy, int64_t n0,
               kernels::Epilogue e) {
  with_rows<Rows>(rows, [&](auto r) {
    for (int j0 = 0; j0 < kVectors && n0 + 16 * j0 < l.n; j0 += Vectors)
      tile<decltype(r)::value, Vectors, kAhead, kUnpacked>(l, panel, unpacked, lhs, m, j0, y, ldy,
                                                           n0, e);
  });
}

inline bool supported(const CpuFeatures& f) {
  return f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni;
}

}  // namespace zmm
}  // namespace
}  // namespace dq4::w4a8
