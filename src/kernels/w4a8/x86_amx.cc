// W4A8 on the AMX tile unit (AMX-INT8 TDPBSUD, amx_w4a8.h) with the VNNI kernel for what tiles do
// not pay for. Compiled with -mamx-tile -mamx-int8 and AVX-512 for the epilogue.

#include <immintrin.h>

#include "amx_w4a8.h"

namespace dq4::w4a8 {

extern const Kernel kAvx512VnniKernel;

namespace {

// GCC's tile intrinsics paste the tile number into the instruction text, so each takes a
// literal: one branch per tile (per tile triple for TDPBSUD, the four the kernel uses).
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

// GCC 12's _tile_loadconfig/_tile_storeconfig declare 8 of the 64 bytes they access and
// _tile_loadd none, so the compiler could drop or delay stores the unit reads: the configuration
// goes through asm naming the whole struct, and a memory barrier precedes every tile load.
struct HardwareTiles {
  static void configure(const amx::TileConfig& c) { __asm__ volatile("ldtilecfg %0" ::"m"(c)); }
  static amx::TileConfig config() {
    amx::TileConfig c;
    __asm__ volatile("sttilecfg %0" : "=m"(c));
    return c;
  }
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
  static void dpbsud() {
    static_assert((C == 0 && A == 4 && B == 6) || (C == 1 && A == 4 && B == 7) ||
                  (C == 2 && A == 5 && B == 6) || (C == 3 && A == 5 && B == 7));
    if constexpr (C == 0) _tile_dpbsud(0, 4, 6);
    if constexpr (C == 1) _tile_dpbsud(1, 4, 7);
    if constexpr (C == 2) _tile_dpbsud(2, 5, 6);
    if constexpr (C == 3) _tile_dpbsud(3, 5, 7);
  }
};
#undef DQ4_TILE_ZERO
#undef DQ4_EACH_TILE

// Tiles have 16 rows: below a full A tile the unit runs partly empty and decode batches are
// bound by the weights' read, where the VNNI kernel streams the packed nibbles directly. Where
// between 16 rows and the VNNI kernel's prefill the two cross is for an AMX machine to measure.
constexpr int64_t kMinRows = 16;

int64_t quantize(const float* x, int64_t ldx, int64_t m0, int64_t m1, const Layout& l,
                 const QuantizedLhs& lhs) {
  return kAvx512VnniKernel.quantize(x, ldx, m0, m1, l, lhs);
}

void run(const Layout& l, const uint8_t* packed, const QuantizedLhs& lhs, int64_t m0, int64_t m1,
         int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue e, uint8_t* scratch) {
  if (!amx_w4a8::on_tiles(l, m1 - m0, kMinRows))
    return kAvx512VnniKernel.run(l, packed, lhs, m0, m1, p0, p1, y, ldy, e, scratch);
  amx_w4a8::run_tiles<HardwareTiles>(l, packed, lhs, m0, m1, p0, p1, y, ldy, e, scratch);
}

int64_t scratch_bytes(const Layout& l, int64_t rows) {
  return amx_w4a8::on_tiles(l, rows, kMinRows) ? amx_w4a8::scratch_size(l, rows)
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
