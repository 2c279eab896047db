// W4A8 on the AMX tile unit (AMX-INT8 TDPBSSD, amx_w4a8.h) with the VNNI kernel for what tiles do
// not pay for. Compiled with -mamx-tile -mamx-int8 and AVX-512 for the epilogue.

#include <immintrin.h>

#include "../amx/hardware_config.h"
#include "amx_w4a8.h"

namespace dq4::w4a8 {

extern const Kernel kAvx512VnniKernel;

namespace {

using amx_w4a8::BlockOut;
using amx_w4a8::kBlockSums;
using amx_w4a8::kNr;

// GCC's tile intrinsics paste the tile number into the instruction text, so each takes a
// literal: one branch per tile (per tile triple for TDPBSSD, the four the kernel uses).
#define DQ4_EACH_TILE(op, ...)              \
  if constexpr (T == 0) op(0, __VA_ARGS__); \
  if constexpr (T == 1) op(1, __VA_ARGS__); \
  if constexpr (T == 2) op(2, __VA_ARGS__); \
  if constexpr (T == 3) op(3, __VA_ARGS__); \
  if constexpr (T == 4) op(4, __VA_ARGS__); \
  if constexpr (T == 5) op(5, __VA_ARGS__); \
  if constexpr (T == 6) op(6, __VA_ARGS__); \
  if constexpr (T == 7) op(7, __VA_ARGS__);
#define DQ4_TILE_ZERO(t, unused) _tile_zero(t)

// GCC 12's _tile_loadd declares no memory access, so the compiler could drop or delay stores the
// unit reads: a memory barrier precedes every tile load (the configuration: hardware_config.h).
struct HardwareTiles {
  static void configure(const amx::TileConfig& c) { amx::load_config(c); }
  static amx::TileConfig config() { return amx::held_config(); }
  template <int T>
  static void zero() {
    DQ4_EACH_TILE(DQ4_TILE_ZERO, 0)
  }
  template <int T>
  static void load(const void* base, int64_t stride) {
    __asm__ volatile("" ::: "memory");
    DQ4_EACH_TILE(_tile_loadd, base, stride)
  }
  template <int T>
  static void store(void* base, int64_t stride) {
    DQ4_EACH_TILE(_tile_stored, base, stride)
  }
  template <int C, int A, int B>
  static void dpbssd() {
    static_assert((C == 0 && A == 4 && B == 6) || (C == 1 && A == 4 && B == 7) ||
                  (C == 2 && A == 5 && B == 6) || (C == 3 && A == 5 && B == 7));
    if constexpr (C == 0) _tile_dpbssd(0, 4, 6);
    if constexpr (C == 1) _tile_dpbssd(1, 4, 7);
    if constexpr (C == 2) _tile_dpbssd(2, 5, 6);
    if constexpr (C == 3) _tile_dpbssd(3, 5, 7);
  }
};
#undef DQ4_TILE_ZERO
#undef DQ4_EACH_TILE

// The work around the tiles in AVX-512: ScalarSimd's (amx_w4a8.h) values in its order, 16
// columns per vector (VCVTDQ2PS rounds as the scalar conversion does, VFMADD as fmaf).
struct Avx512Simd {
  static void unpack_step(const uint8_t* w, int8_t* b, int64_t block_bytes) {
    const __m512i nibble = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
    for (int j = 0; j < 4; ++j) {
      const __m512i raw = _mm512_loadu_si512(w + 64 * j);
      const __m512i lo = _mm512_sub_epi8(_mm512_and_si512(raw, nibble), eight);
      const __m512i hi =
          _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble), eight);
      _mm512_storeu_si512(b + j * block_bytes, lo);
      _mm512_storeu_si512(b + j * block_bytes + 64, hi);
    }
  }
  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T1); }
  static void widen_scales(const uint16_t* bf16, float* f32) {
    for (int j = 0; j < 4; ++j)
      _mm512_storeu_ps(f32 + 16 * j, _mm512_castsi512_ps(_mm512_slli_epi32(
                                         _mm512_cvtepu16_epi32(_mm256_loadu_si256(
                                             reinterpret_cast<const __m256i*>(bf16 + 16 * j))),
                                         16)));
  }
  // y = (y > lo ? y : lo), then (y < hi ? y : hi), stored or added to row r's 16 j.. columns.
  static void write(const BlockOut& o, int r, int j, __m512 v) {
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(o.e.lo)), _mm512_set1_ps(o.e.hi));
    float* dst = o.y + r * o.ldy + 16 * j;
    const int valid = o.cols - 16 * j;
    if (valid <= 0) return;
    const __mmask16 mask = valid >= 16 ? 0xffff : static_cast<__mmask16>((1u << valid) - 1);
    if (o.e.accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, dst), v);
    _mm512_mask_storeu_ps(dst, mask, v);
  }
  static void finish_channelwise(const int32_t* sums, const BlockOut& o) {
    __m512 scale[2], bias[2];
    __m512i column_sums[2];
    for (int j = 0; j < 2; ++j) {
      scale[j] = _mm512_loadu_ps(o.panel->scales() + o.c0 + 16 * j);
      bias[j] = _mm512_loadu_ps(o.panel->cw_bias() + o.c0 + 16 * j);
      column_sums[j] = _mm512_loadu_si512(o.panel->column_sums() + o.c0 + 16 * j);
    }
    for (int r = 0; r < o.rows; ++r) {
      const int64_t m = o.m + r;
      const __m512i zp = _mm512_set1_epi32(o.lhs->zp[m]);
      const __m512 recip = _mm512_set1_ps(o.lhs->recip[m]);
      for (int j = 0; j < 2; ++j) {
        const __m512i u = _mm512_sub_epi32(_mm512_load_si512(sums + r * 32 + 16 * j),
                                           _mm512_mullo_epi32(zp, column_sums[j]));
        write(o, r, j,
              _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(u), _mm512_mul_ps(scale[j], recip)),
                            bias[j]));
      }
    }
  }
  // A batch's group count as a template argument: the group loop unrolls and each group's
  // scales stay in registers over the rows.
  template <int kGroups>
  static void accumulate(const int32_t* sums, const float* scale, int rows, float* facc,
                         bool first) {
    __m512 d[kGroups][2];
    for (int i = 0; i < kGroups; ++i)
      for (int j = 0; j < 2; ++j) d[i][j] = _mm512_loadu_ps(scale + i * kNr + 16 * j);
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < 2; ++j) {
        float* acc_at = facc + r * 32 + 16 * j;
        __m512 acc = first ? _mm512_setzero_ps() : _mm512_load_ps(acc_at);
        for (int i = 0; i < kGroups; ++i)
          acc = _mm512_fmadd_ps(
              _mm512_cvtepi32_ps(_mm512_load_si512(sums + i * kBlockSums + r * 32 + 16 * j)),
              d[i][j], acc);
        _mm512_store_ps(acc_at, acc);
      }
  }
  static void accumulate_groups(const int32_t* sums, const float* scale, int groups, int rows,
                                float* facc, bool first) {
    static_assert(amx_w4a8::kGroupBatch == 4);
    switch (groups) {
      case 1:
        return accumulate<1>(sums, scale, rows, facc, first);
      case 2:
        return accumulate<2>(sums, scale, rows, facc, first);
      case 3:
        return accumulate<3>(sums, scale, rows, facc, first);
      default:
        return accumulate<4>(sums, scale, rows, facc, first);
    }
  }
  static void finish_groupwise(const float* facc, const BlockOut& o) {
    __m512 row_sums[2], bias[2];
    for (int j = 0; j < 2; ++j) {
      row_sums[j] = _mm512_loadu_ps(o.panel->row_sums() + o.c0 + 16 * j);
      bias[j] = _mm512_loadu_ps(o.panel->gw_bias() + o.c0 + 16 * j);
    }
    for (int r = 0; r < o.rows; ++r) {
      const int64_t m = o.m + r;
      const __m512 neg_zp = _mm512_set1_ps(static_cast<float>(-o.lhs->zp[m]));
      const __m512 recip = _mm512_set1_ps(o.lhs->recip[m]);
      for (int j = 0; j < 2; ++j) {
        const __m512 acc =
            _mm512_fmadd_ps(row_sums[j], neg_zp, _mm512_load_ps(facc + r * 32 + 16 * j));
        write(o, r, j, _mm512_add_ps(_mm512_mul_ps(acc, recip), bias[j]));
      }
    }
  }
};

// The fewest rows a call runs on the tiles. Tiles have 16 rows: with fewer the unit runs partly
// empty while every group's sums still leave it through a tile store, where the VNNI kernel
// streams the packed nibbles directly. The fewer stores per k a group size needs, the fewer rows
// pay: the crossovers with avx512_vnni, measured (docs/kernels.md), are 8 rows channelwise and
// for groups of a multiple of 128, 12 for other multiples of 64, 16 for groups of 32 (half-deep
// tiles).
int64_t min_rows(const Layout& l) {
  if (l.channelwise || l.group % 128 == 0) return 8;
  return l.group % 64 == 0 ? 12 : 16;
}

int64_t quantize(const float* x, int64_t ldx, int64_t m0, int64_t m1, const Layout& l,
                 const QuantizedLhs& lhs) {
  return kAvx512VnniKernel.quantize(x, ldx, m0, m1, l, lhs);
}

void run(const Layout& l, const uint8_t* packed, const QuantizedLhs& lhs, int64_t m0, int64_t m1,
         int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue e, uint8_t* scratch) {
  if (!amx_w4a8::on_tiles(l, m1 - m0, min_rows(l)))
    return kAvx512VnniKernel.run(l, packed, lhs, m0, m1, p0, p1, y, ldy, e, scratch);
  amx_w4a8::run_tiles<HardwareTiles, Avx512Simd>(l, packed, lhs, m0, m1, p0, p1, y, ldy, e,
                                                 scratch);
}

int64_t scratch_bytes(const Layout& l, int64_t rows) {
  return amx_w4a8::on_tiles(l, rows, min_rows(l)) ? amx_w4a8::scratch_size(l, rows)
                                                  : kAvx512VnniKernel.scratch_bytes(l, rows);
}

// amx_int8 is set only where the OS saves tile state and granted this process its use.
bool supported(const CpuFeatures& f) {
  return f.amx_tile && f.amx_int8 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni;
}

}  // namespace

extern const Kernel kAmxKernel = {"amx",
                                  "qai8dx_qsi4_f32_amx_32x32",
                                  "amx_tile+amx_int8 with the OS's tile permission, avx512_vnni",
                                  amx_w4a8::kNr,
                                  supported,
                                  quantize,
                                  run,
                                  scratch_bytes};

}  // namespace dq4::w4a8
