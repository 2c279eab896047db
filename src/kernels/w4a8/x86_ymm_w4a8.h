#pragma once
// The 256-bit W4A8 kernel shared by the AVX2 and AVX-VNNI variants; each includes this header in
// its own translation unit (compiled with its own -m flags) and supplies the 4-byte dot step:
//   Dot::step(acc, lo, a_lo, hi, a_hi) = acc + sum over 4-byte lanes of lo*a_lo + hi*a_hi
// where lo/hi are u8 nibble planes (values 0..15) and a_lo/a_hi broadcast s8 activations.
// Panels are 16 columns (2 ymm per step of 8 k).

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
namespace ymm {

constexpr int kNr = 16;
constexpr int kVectors = kNr / 8;

// round(v) with ties away from zero, as an integer: v + (the float just below 0.5, with v's sign),
// rounded to nearest even by the add, then truncated. Exact for every float: below 0.5 from an
// integer the sum stays below the next one; at 0.5 exactly it rounds up to it.
inline __m256i round_half_away(__m256 v) {
  const __m256 sign = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN)));
  const __m256 below_half = _mm256_or_ps(_mm256_castsi256_ps(_mm256_set1_epi32(0x3effffff)), sign);
  return _mm256_cvttps_epi32(_mm256_add_ps(v, below_half));
}

// The 8 floats from x[0..) of which the first `valid` (may be <= 0) are read, the rest 0.
inline __m256 load_first(const float* x, int64_t valid) {
  if (valid >= 8) return _mm256_loadu_ps(x);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)), lanes);
  return _mm256_maskload_ps(x, mask);
}

// The row's min and max with 0 (which row_quant_params adds anyway, so the lanes past k, loaded as
// 0, change nothing), and whether it holds a NaN or an infinity (v * 0 is NaN only for those).
// Four independent sets, so that the min/max latency does not bound the loop.
inline bool row_range(const float* row, int64_t k, float* row_min, float* row_max) {
  __m256 vmin[4], vmax[4], nan_if_bad[4];
  for (int i = 0; i < 4; ++i) vmin[i] = vmax[i] = nan_if_bad[i] = _mm256_setzero_ps();
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t j = 0; j < k; j += 32)
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const __m256 v = j + 32 <= k ? _mm256_loadu_ps(row + j + 8 * i)
                                   : load_first(row + j + 8 * i, k - j - 8 * i);
      vmin[i] = _mm256_min_ps(vmin[i], v);
      vmax[i] = _mm256_max_ps(vmax[i], v);
      nan_if_bad[i] = _mm256_fmadd_ps(v, zero, nan_if_bad[i]);
    }
  const __m256 bad = _mm256_add_ps(_mm256_add_ps(nan_if_bad[0], nan_if_bad[1]),
                                   _mm256_add_ps(nan_if_bad[2], nan_if_bad[3]));
  if (_mm256_movemask_ps(_mm256_cmp_ps(bad, bad, _CMP_UNORD_Q)) != 0) return false;
  float lanes_min[8], lanes_max[8];
  _mm256_storeu_ps(lanes_min,
                   _mm256_min_ps(_mm256_min_ps(vmin[0], vmin[1]), _mm256_min_ps(vmin[2], vmin[3])));
  _mm256_storeu_ps(lanes_max,
                   _mm256_max_ps(_mm256_max_ps(vmax[0], vmax[1]), _mm256_max_ps(vmax[2], vmax[3])));
  *row_min = *row_max = 0.0f;
  for (int i = 0; i < 8; ++i) {
    *row_min = lanes_min[i] < *row_min ? lanes_min[i] : *row_min;
    *row_max = lanes_max[i] > *row_max ? lanes_max[i] : *row_max;
  }
  return true;
}

// 32 values from x[0..) quantized to int8 in k order, those from `valid` on (< 32) zero: rounded
// as int32, narrowed to int16 (exact: |round(v * mul)| <= 256), the zero point added in int16
// (exact), then narrowed to int8 with saturation, which is the clamp to [-128, 127]. The packs
// interleave the 128-bit lanes; one dword permutation restores k order.
inline __m256i quantize32(const float* x, int64_t valid, __m256 mul, __m256i zp16) {
  __m256i r[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)
    r[i] = round_half_away(_mm256_mul_ps(load_first(x + 8 * i, valid - 8 * i), mul));
  const __m256i low = _mm256_adds_epi16(_mm256_packs_epi32(r[0], r[1]), zp16);
  const __m256i high = _mm256_adds_epi16(_mm256_packs_epi32(r[2], r[3]), zp16);
  const __m256i q = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(low, high),
                                                _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  if (valid >= 32) return q;
  const __m256i bytes =
      _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                       22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
  return _mm256_and_si256(q, _mm256_cmpgt_epi8(_mm256_set1_epi8(static_cast<char>(valid)), bytes));
}

// The sum of a block's 32 int8 values and of those at k % 4 >= 2 (the odd int16 pair sums).
inline void block_sums(__m256i q, int32_t* total, int32_t* high) {
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q);
  const __m256i totals = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
  const __m256i highs = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x00010000));
  __m256i s = _mm256_hadd_epi32(totals, highs);  // per lane: t01 t23 h01 h23
  s = _mm256_hadd_epi32(s, s);                   // per lane: t h t h
  const __m128i both = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  *total = _mm_cvtsi128_si32(both);
  *high = _mm_extract_epi32(both, 1);
}

inline int64_t quantize(const float* x, int64_t ldx, int64_t m0, int64_t m1, const Layout& l,
                        const QuantizedLhs& lhs) {
  for (int64_t m = m0; m < m1; ++m) {
    const float* row = x + m * ldx;
    float row_min, row_max;
    if (!row_range(row, l.k, &row_min, &row_max)) return m;
    const RowQuantParams p = row_quant_params(row_min, row_max);
    const __m256 mul = _mm256_set1_ps(p.mul);
    const __m256i zp16 = _mm256_set1_epi16(static_cast<int16_t>(p.zp));
    int8_t* q = lhs.q + m * lhs.ldq;
    // kp is a multiple of 32 and each block of 32 is a group (or the only one, k <= 32).
    for (int64_t k = 0, g = m * lhs.groups; k < l.kp; k += 32, ++g) {
      const __m256i values = quantize32(row + k, l.k - k, mul, zp16);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + k), values);
      int32_t total, high;
      block_sums(values, &total, &high);
      lhs.asum[g] = total;
      lhs.block_lane_corrections[g] = lane_correction(total, high);
    }
    lhs.recip[m] = p.recip;
    lhs.zp[m] = p.zp;
  }
  return -1;
}

inline int32_t load_dword(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Decode streams weights from DRAM once: prefetch ahead. Prefill re-reads panels from L2.
constexpr int kPrefetchBytes = 2048;

// The two nibble planes of 32 packed bytes (8 columns x 4 bytes of a step): lo = k..k+3 and
// hi = k+4..k+7, one u4 per byte.
__attribute__((always_inline)) inline void split_nibbles(__m256i raw, __m256i low_mask, __m256i& lo,
                                                         __m256i& hi) {
  lo = _mm256_and_si256(raw, low_mask);
  hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low_mask);
}

// How a tile reads its weights: the panel's nibbles (from L1/L2), the nibbles while prefetching
// `prefetch` bytes ahead of them (the tile that streams a panel, or brings the next one), or the
// panel's planes unpacked once into scratch (prefill: each of many tiles skips the unpack).
enum class Read { nibbles, nibbles_prefetching, planes };

// Bytes of one step of 8 k in what a tile reads: 16 columns x 4 bytes of nibbles, or of each plane.
template <Read kRead>
constexpr int64_t kStepBytes = kRead == Read::planes ? kNr * 8 : kNr * 4;

// The steps of 8 k from k0 of MR rows with the 16 columns: per step, the two nibble planes of
// columns 8j..8j+7 (lo[j], hi[j]: u4 in bytes) and each row's 8 activations (a_lo, a_hi: 4 bytes
// broadcast), handed to add(acc[r][j], lo[j], a_lo, hi[j], a_hi). The loop stays rolled: unrolled,
// the compiler reassociates int16 adds across steps, computes every product first and spills.
template <int MR, Read kRead, class Add>
__attribute__((always_inline)) inline void for_steps(const uint8_t* w, int64_t prefetch,
                                                     int64_t steps, const int8_t* const* q,
                                                     int64_t k0, __m256i (&acc)[MR][kVectors],
                                                     Add&& add) {
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 1
  for (int64_t s = 0; s < steps; ++s, w += kStepBytes<kRead>) {
    if constexpr (kRead == Read::nibbles_prefetching)
      _mm_prefetch(reinterpret_cast<const char*>(w + prefetch), _MM_HINT_T0);
    __m256i lo[kVectors], hi[kVectors];
#pragma GCC unroll 2
    for (int j = 0; j < kVectors; ++j) {
      if constexpr (kRead == Read::planes) {
        lo[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(w + 32 * j));
        hi[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(w + kNr * 4 + 32 * j));
      } else {
        split_nibbles(_mm256_load_si256(reinterpret_cast<const __m256i*>(w + 32 * j)), low_mask,
                      lo[j], hi[j]);
      }
    }
    const int64_t k = k0 + s * 8;
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      const __m256i a_lo = _mm256_set1_epi32(load_dword(q[r] + k));
      const __m256i a_hi = _mm256_set1_epi32(load_dword(q[r] + k + 4));
#pragma GCC unroll 2
      for (int j = 0; j < kVectors; ++j) acc[r][j] = add(acc[r][j], lo[j], a_lo, hi[j], a_hi);
    }
  }
}

// Integer dot products init(r, j) + sum(a * u) of MR rows with the 16 columns over `steps` steps
// of 8 k from k0, handed to finish(r, j, sums of columns 8j..8j+7) while still in registers.
template <class Dot, int MR, Read kRead, class Init, class Finish>
__attribute__((always_inline)) inline void dot_steps(const uint8_t* w, int64_t prefetch,
                                                     int64_t steps, const int8_t* const* q,
                                                     int64_t k0, Init&& init, Finish&& finish) {
  __m256i acc[MR][kVectors];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < kVectors; ++j) acc[r][j] = init(r, j);
  for_steps<MR, kRead>(w, prefetch, steps, q, k0, acc, Dot::step);
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < kVectors; ++j) finish(r, j, acc[r][j]);
}

inline __m256 clamp(__m256 y, __m256 lo, __m256 hi) {
  return _mm256_min_ps(_mm256_max_ps(y, lo), hi);  // (y > lo ? y : lo), then (y < hi ? y : hi)
}

inline __m256 load_bf16(const uint16_t* p) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
}

// One 32-k block (4 steps) on a Dot with int16 pair sums, summed in int16 lanes from init[r]
// (sums[r][j]: columns 8j..8j+7 of row r, two lanes per column) for the caller to widen once.
template <class Dot, int MR, Read kRead>
__attribute__((always_inline)) inline void block_pair_sums(const uint8_t* w, int64_t prefetch,
                                                           const int8_t* const* q, int64_t k0,
                                                           const __m256i (&init)[MR],
                                                           __m256i (&sums)[MR][kVectors]) {
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < kVectors; ++j) sums[r][j] = init[r];
  for_steps<MR, kRead>(w, prefetch, 4, q, k0, sums,
                       [](__m256i sum, __m256i lo, __m256i a_lo, __m256i hi, __m256i a_hi) {
                         return _mm256_add_epi16(sum, Dot::pair_sums(lo, a_lo, hi, a_hi));
                       });
}

// dot_steps' contract on whole 32-k blocks (`steps` a multiple of 4, as every group and the
// channelwise K are). A Dot with int16 pair sums widens once per block: straight into finish for
// a single block (group 32), else into int32 sums kept in L1 (registers hold the int16 ones).
// init(r, j): the sums' start (a vector of int32). kLaneStart (a single block, the same start
// for every j of a row): init is not added after widening but holds the two int16 lanes the
// block's sums start from (QuantizedLhs::block_lane_corrections): one broadcast per row instead
// of an add per row and vector.
template <class Dot, int MR, Read kRead, bool kLaneStart, class Init, class Finish>
__attribute__((always_inline)) inline void dot(const uint8_t* w, int64_t prefetch, int64_t steps,
                                               const int8_t* const* q, int64_t k0, Init&& init,
                                               Finish&& finish) {
  if constexpr (!Dot::kPairSums) {
    dot_steps<Dot, MR, kRead>(w, prefetch, steps, q, k0, init, finish);
  } else if (steps == 4) {
    __m256i lanes[MR], sums[MR][kVectors];
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) lanes[r] = kLaneStart ? init(r, 0) : _mm256_setzero_si256();
    block_pair_sums<Dot, MR, kRead>(w, prefetch, q, k0, lanes, sums);
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
      for (int j = 0; j < kVectors; ++j)
        finish(r, j,
               kLaneStart ? Dot::widen(sums[r][j])
                          : _mm256_add_epi32(Dot::widen(sums[r][j]), init(r, j)));
  } else {
    alignas(32) int32_t acc[MR][kNr];
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
      for (int j = 0; j < kVectors; ++j)
        _mm256_store_si256(reinterpret_cast<__m256i*>(acc[r] + 8 * j), init(r, j));
    const __m256i zero[MR] = {};
    for (int64_t b = 0; b < steps / 4; ++b) {
      __m256i sums[MR][kVectors];
      block_pair_sums<Dot, MR, kRead>(w + b * 4 * kStepBytes<kRead>, prefetch, q, k0 + 32 * b, zero,
                                      sums);
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
        for (int j = 0; j < kVectors; ++j) {
          __m256i* a = reinterpret_cast<__m256i*>(acc[r] + 8 * j);
          _mm256_store_si256(a, _mm256_add_epi32(_mm256_load_si256(a), Dot::widen(sums[r][j])));
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
      for (int j = 0; j < kVectors; ++j)
        finish(r, j, _mm256_load_si256(reinterpret_cast<const __m256i*>(acc[r] + 8 * j)));
  }
}

// What a tile reads (kRead says which): the panel, and its planes in scratch or the prefetch
// distance.
struct TileWeights {
  PanelView panel;
  const uint8_t* planes = nullptr;  // Read::planes: the panel as unpack_panel() wrote it
  int64_t prefetch = 0;             // Read::nibbles_prefetching: bytes ahead of each step

  template <Read kRead>
  const uint8_t* group(const Layout& l, int64_t g) const {
    if constexpr (kRead == Read::planes) return planes + g * l.full_group_steps * kStepBytes<kRead>;
    return panel.group_data(g);
  }
};

// A tile's running sums between parts of K, 32-byte aligned, `ld` elements from one row to the
// next: per row and column sum a*q so far (int32) when channelwise, the group sums times their
// scales so far (f32) when groupwise.
struct TileSums {
  void* data;
  int64_t ld;
  __m256i* ints(int r, int j) const {
    return reinterpret_cast<__m256i*>(static_cast<int32_t*>(data) + r * ld + 8 * j);
  }
  float* floats(int r, int j) const { return static_cast<float*>(data) + r * ld + 8 * j; }
};

// Groupwise: facc[r] += the scaled integer sums of groups [g0, g1), in group order.
// sum a*u - 8 sum a = sum a*q over a group: with kLaneStart (group 32 on int16 pair sums) the
// block's lanes start from the -8 sum a, else it is added after widening.
template <class Dot, int MR, Read kRead, bool kLaneStart>
__attribute__((always_inline)) inline void group_sums(const Layout& l, const TileWeights& w,
                                                      const QuantizedLhs& lhs, int64_t m,
                                                      const int8_t* const* q, int64_t g0,
                                                      int64_t g1, float (&facc)[MR][kNr]) {
  for (int64_t g = g0; g < g1; ++g) {
    int32_t start[MR];
    for (int r = 0; r < MR; ++r)
      start[r] = kLaneStart ? lhs.block_lane_corrections[(m + r) * l.groups + g]
                            : -8 * lhs.asum[(m + r) * lhs.groups + g];
    const uint16_t* scales = w.panel.group_scales(g);
    dot<Dot, MR, kRead, kLaneStart>(
        w.group<kRead>(l, g), w.prefetch, l.group_steps(g), q, l.group_begin(g),
        [&](int r, int) { return _mm256_set1_epi32(start[r]); },
        [&](int r, int j, __m256i block) {
          _mm256_store_ps(facc[r] + 8 * j,
                          _mm256_fmadd_ps(_mm256_cvtepi32_ps(block), load_bf16(scales + 8 * j),
                                          _mm256_load_ps(facc[r] + 8 * j)));
        });
  }
}

// The parts of K a layout's sums run over: steps of 8 k when channelwise, groups when groupwise.
inline int64_t k_parts(const Layout& l) { return l.channelwise ? l.full_group_steps : l.groups; }

// Adds the products of rows m..m+MR-1 with the panel's 16 columns over parts [part0, part1) of K
// (k_parts) to `sums`. `first`: the sums start here (from -8 sum a, which turns sum a*u into
// sum a*q, or from 0). Channelwise parts are whole 32-k blocks, as dot() needs.
template <class Dot, int MR, Read kRead>
void accumulate(const Layout& l, const TileWeights& w, const QuantizedLhs& lhs, int64_t m,
                int64_t part0, int64_t part1, bool first, const TileSums& sums) {
  const int8_t* q[MR];
  for (int r = 0; r < MR; ++r) q[r] = lhs.q + (m + r) * lhs.ldq;
  if (l.channelwise) {
    dot<Dot, MR, kRead, false>(
        w.group<kRead>(l, 0) + part0 * kStepBytes<kRead>, w.prefetch, part1 - part0, q, 8 * part0,
        [&](int r, int j) {
          return first ? _mm256_set1_epi32(-8 * lhs.asum[(m + r) * lhs.groups])
                       : _mm256_load_si256(sums.ints(r, j));
        },
        [&](int r, int j, __m256i sum) { _mm256_store_si256(sums.ints(r, j), sum); });
    return;
  }
  // The f32 group accumulators stay in memory (L1): in registers they would crowd out the
  // integer accumulators of the hot loop. A local array, not `sums`, which the compiler would
  // have to assume every vector store may alias.
  alignas(32) float facc[MR][kNr];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < kVectors; ++j)
      _mm256_store_ps(facc[r] + 8 * j,
                      first ? _mm256_setzero_ps() : _mm256_load_ps(sums.floats(r, j)));
  if (Dot::kPairSums && l.group == 32 && lhs.block_lane_corrections != nullptr)
    group_sums<Dot, MR, kRead, true>(l, w, lhs, m, q, part0, part1, facc);
  else
    group_sums<Dot, MR, kRead, false>(l, w, lhs, m, q, part0, part1, facc);
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < kVectors; ++j)
      _mm256_store_ps(sums.floats(r, j), _mm256_load_ps(facc[r] + 8 * j));
}

// Output rows m..m+MR-1 of the panel's columns from the sums over the whole of K.
template <int MR>
void finish(const Layout& l, const PanelView& panel, const QuantizedLhs& lhs, int64_t m,
            const TileSums& sums, float* y, int64_t ldy, int64_t n0, kernels::Epilogue e) {
  __m256 out[MR][kVectors];
  for (int r = 0; r < MR; ++r) {
    const __m256 recip = _mm256_set1_ps(lhs.recip[m + r]);
    for (int j = 0; j < kVectors; ++j) {
      if (l.channelwise) {
        const __m256i zp = _mm256_set1_epi32(lhs.zp[m + r]);
        const __m256i column_sums =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel.column_sums() + 8 * j));
        const __m256i u = _mm256_sub_epi32(_mm256_load_si256(sums.ints(r, j)),
                                           _mm256_mullo_epi32(zp, column_sums));
        const __m256 sp = _mm256_mul_ps(_mm256_loadu_ps(panel.scales() + 8 * j), recip);
        out[r][j] = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(u), sp),
                                  _mm256_loadu_ps(panel.cw_bias() + 8 * j));
      } else {
        const __m256 neg_zp = _mm256_set1_ps(static_cast<float>(-lhs.zp[m + r]));
        const __m256 acc = _mm256_fmadd_ps(_mm256_loadu_ps(panel.row_sums() + 8 * j), neg_zp,
                                           _mm256_load_ps(sums.floats(r, j)));
        out[r][j] =
            _mm256_add_ps(_mm256_mul_ps(acc, recip), _mm256_loadu_ps(panel.gw_bias() + 8 * j));
      }
    }
  }
  const __m256 vlo = _mm256_set1_ps(e.lo), vhi = _mm256_set1_ps(e.hi);
  const int64_t valid = l.n - n0;
  for (int r = 0; r < MR; ++r) {
    float* dst = y + (m + r) * ldy + n0;
    for (int j = 0; j < kVectors; ++j) {
      const __m256 v = clamp(out[r][j], vlo, vhi);
      if (valid >= 8 * (j + 1)) {
        _mm256_storeu_ps(dst + 8 * j,
                         e.accumulate ? _mm256_add_ps(_mm256_loadu_ps(dst + 8 * j), v) : v);
      } else if (valid > 8 * j) {
        float lanes[8];
        _mm256_storeu_ps(lanes, v);
        for (int64_t i = 0; i < valid - 8 * j; ++i)
          kernels::write_output(dst + 8 * j + i, lanes[i], e);
      }
    }
  }
}

// Output rows m..m+MR-1 of the panel's columns, all of K in one pass.
template <class Dot, int MR, Read kRead>
void tile(const Layout& l, const TileWeights& w, const QuantizedLhs& lhs, int64_t m, float* y,
          int64_t ldy, int64_t n0, kernels::Epilogue e) {
  alignas(32) int32_t buffer[MR * kNr];
  const TileSums sums{buffer, kNr};
  accumulate<Dot, MR, kRead>(l, w, lhs, m, 0, k_parts(l), true, sums);
  finish<MR>(l, w.panel, lhs, m, sums, y, ldy, n0, e);
}

// f(std::integral_constant<int, rows>) for a run-time rows in 1..4.
template <class F>
void with_rows(int64_t rows, F&& f) {
  switch (rows) {
    case 4:
      return f(std::integral_constant<int, 4>());
    case 3:
      return f(std::integral_constant<int, 3>());
    case 2:
      return f(std::integral_constant<int, 2>());
    default:
      return f(std::integral_constant<int, 1>());
  }
}

// tile<Dot, rows, kRead> for a run-time rows in 1..4.
template <class Dot, Read kRead>
void tile_rows(const Layout& l, const TileWeights& w, const QuantizedLhs& lhs, int64_t m,
               int64_t rows, float* y, int64_t ldy, int64_t n0, kernels::Epilogue e) {
  with_rows(rows,
            [&](auto r) { tile<Dot, decltype(r)::value, kRead>(l, w, lhs, m, y, ldy, n0, e); });
}

// Splits a panel's nibbles into planes, step by step: [lo: 16 columns x 4 bytes][hi: the same].
inline void unpack_panel(const Layout& l, const PanelView& panel, uint8_t* out) {
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  for (int64_t g = 0; g < l.groups; ++g) {
    const uint8_t* w = panel.group_data(g);
    for (int64_t s = 0; s < l.group_steps(g); ++s, w += kNr * 4, out += kNr * 8) {
      for (int j = 0; j < kVectors; ++j) {
        __m256i lo, hi;
        split_nibbles(_mm256_load_si256(reinterpret_cast<const __m256i*>(w + 32 * j)), low_mask, lo,
                      hi);
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + 32 * j), lo);
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + kNr * 4 + 32 * j), hi);
      }
    }
  }
}

// Calls of more rows than this unpack each panel into scratch first: the unpack is then paid
// once per panel rather than once per 4-row tile (channelwise and G >= 64). Fewer rows are bound
// by memory, where a separate unpack pass would stream the panel without overlapping any
// arithmetic. Not at G = 32: there the tiles, busy with the per-group epilogue, lose more to
// reading twice the bytes per step than the unpack saves (measurements: docs/kernels.md).
constexpr int64_t kUnpackRows = 16;
// The planes of a panel stay in L2 up to this size (K <= 16384).
constexpr int64_t kMaxPlanesBytes = int64_t{1} << 20;

inline int64_t planes_bytes(const Layout& l) { return l.panel_steps() * kStepBytes<Read::planes>; }

inline int64_t scratch_bytes(const Layout& l, int64_t rows) {
  const int64_t bytes = planes_bytes(l);
  const bool group32 = !l.channelwise && l.group == 32;
  return rows > kUnpackRows && !group32 && bytes <= kMaxPlanesBytes ? bytes : 0;
}

// Decode batches of 5 to chunked_rows<Dot> rows run K a chunk at a time: every 4-row tile over
// one chunk (all prefetching ahead: the later tiles' prefetches find the lines on their way)
// before the next chunk, the sums waiting in L1 between chunks, so that the chunk's read from
// memory overlaps the arithmetic of all the rows rather than the first tile's. A chunk is the
// prefetch distance, so that one chunk's tiles fetch the next; whole 32-k blocks.
constexpr int64_t kChunkSteps = kPrefetchBytes / (kNr * 4);
static_assert(kChunkSteps % 4 == 0);
// On int16 pair sums (AVX2) the arithmetic is the bound from 8 rows on, and there the whole-panel
// tiles, the second bringing in the next panel, measured faster for groupwise layouts.
template <class Dot>
constexpr int64_t chunked_rows = Dot::kPairSums ? 7 : kUnpackRows;

template <class Dot>
void batch_panel(const Layout& l, const PanelView& panel, const QuantizedLhs& lhs, int64_t m0,
                 int64_t m1, float* y, int64_t ldy, int64_t n0, kernels::Epilogue e) {
  alignas(32) int32_t buffer[kUnpackRows * kNr];
  const int64_t parts = k_parts(l);
  const int64_t per_chunk =
      l.channelwise ? kChunkSteps : std::max<int64_t>(1, kChunkSteps / l.full_group_steps);
  const TileWeights w{panel, nullptr, kPrefetchBytes};
  for (int64_t part0 = 0; part0 < parts; part0 += per_chunk) {
    const int64_t part1 = std::min(parts, part0 + per_chunk);
    for (int64_t m = m0; m < m1; m += 4)
      with_rows(std::min<int64_t>(4, m1 - m), [&](auto r) {
        accumulate<Dot, decltype(r)::value, Read::nibbles_prefetching>(
            l, w, lhs, m, part0, part1, part0 == 0, {buffer + (m - m0) * kNr, kNr});
      });
  }
  for (int64_t m = m0; m < m1; m += 4)
    with_rows(std::min<int64_t>(4, m1 - m), [&](auto r) {
      finish<decltype(r)::value>(l, panel, lhs, m, {buffer + (m - m0) * kNr, kNr}, y, ldy, n0, e);
    });
}

template <class Dot>
void run(const Layout& l, const uint8_t* packed, const QuantizedLhs& lhs, int64_t m0, int64_t m1,
         int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue e, uint8_t* scratch) {
  for (int64_t p = p0; p < p1; ++p) {
    const PanelView panel = panel_view(packed, l, p);
    const int64_t n0 = p * kNr;
    if (scratch != nullptr) {
      unpack_panel(l, panel, scratch);
      for (int64_t m = m0; m < m1; m += 4)
        tile_rows<Dot, Read::planes>(l, {panel, scratch, 0}, lhs, m, std::min<int64_t>(4, m1 - m),
                                     y, ldy, n0, e);
      continue;
    }
    if (m1 - m0 > 4 && m1 - m0 <= chunked_rows<Dot>) {
      batch_panel<Dot>(l, panel, lhs, m0, m1, y, ldy, n0, e);
      continue;
    }
    // Every 4-row tile reads the whole panel. Panel outer, rows inner: the weights are read from
    // memory once for all rows. The first tile streams the panel (prefetching ahead, into the
    // next panel); the second, while it computes from L1, brings the next panel's weights into
    // the caches, so that with a few tiles per panel the first does not wait on memory.
    tile_rows<Dot, Read::nibbles_prefetching>(l, {panel, nullptr, kPrefetchBytes}, lhs, m0,
                                              std::min<int64_t>(4, m1 - m0), y, ldy, n0, e);
    for (int64_t m = m0 + 4; m < m1; m += 4) {
      const int64_t rows = std::min<int64_t>(4, m1 - m);
      if (m == m0 + 4 && p + 1 < p1)
        tile_rows<Dot, Read::nibbles_prefetching>(l, {panel, nullptr, l.panel_bytes}, lhs, m, rows,
                                                  y, ldy, n0, e);
      else
        tile_rows<Dot, Read::nibbles>(l, {panel, nullptr, 0}, lhs, m, rows, y, ldy, n0, e);
    }
  }
}

}  // namespace ymm
}  // namespace
}  // namespace dq4::w4a8
