// Google Benchmark of what a groupwise W4A8 product costs on the AMX unit, piece by piece, in the
// pattern of the `amx` kernel (src/kernels/w4a8/amx_w4a8.h): a 32 x 32 block of four int32
// accumulator tiles, two 16-row A tiles and two 16-column B tiles per chunk of K, one group of
// 32 k per chunk (half-deep TDPBSSD, as G = 32 needs), the B slice in L1 and the A rows of eight
// row blocks from L2. Every case reports seconds per unit: one 16 x 16 tile of sums over one
// group (16 x 16 x 32 multiply-adds), so the pieces can be added up and set beside the kernel's
// own time per unit (`dq4 bench kernels --isa amx`: 2 M N K / GFLOP/s / 16384).
//
//   dots                 tile loads and TDPBSSD only, the sums kept in the tiles over all groups
//   dots_stored          the same, each group's sums zeroed, computed and stored (TILESTORED)
//   fold                 the AVX-512 epilogue alone: a stored group's sums converted to f32 and
//                        multiplied-added into the f32 accumulators with the group's scales,
//                        four groups per pass over the accumulators
//   dots_stored_fold     both, in the kernel's order: four groups stored, then one fold pass
//   loads                the tile loads alone (two A and two B tiles per group)
//   stores               the four TILESTORED per group alone
//   loads_stores         both, no TDPBSSD
//   dots_stored_fold_apart  dots_stored_fold with the fold reading sums no tile store wrote
//   products             TDPBSSD alone, on operands loaded once per row block
//   vector               register-only vector work, as many FMAs per group as the fold has
//                        operations (no loads or stores), on eight independent chains
//   products_vector      products with that work after each group's TDPBSSD
//   dots_vector          dots with it
//   loads_vector         loads with it
//   stores_vector        stores with it
//
// Where dots_stored_fold is close to dots_stored + fold, the unit does not overlap the tile work
// with the vector epilogue, and the groupwise kernel's floor is that sum. The next three show
// what the tile data movement alone costs: tile loads and stores go through L1 a line at a time,
// and the stores of each group's sums (1 KiB per unit) do not overlap the TDPBSSD that make them.
// The last seven tell a dependency apart from the core: the fold costs as much when no tile store
// wrote its sums, and vector work of the fold's size with no tie to the tiles' memory adds its
// time to TDPBSSD, tile loads and tile stores alike (each *_vector case near the sum of its two
// parts), so no reordering of the fold lets it hide behind the tile work around it.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>

#include "dq4/kernels/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "../src/kernels/amx/hardware_config.h"

namespace {

constexpr int kGroups = 8;     // groups of 32 k in the L1 slice of B
constexpr int kRowBlocks = 8;  // row blocks of 32 whose A rows come from L2
constexpr int kBatch = 4;      // groups per fold pass
constexpr int kUnitsPerGroup = 4;

struct Operands {
  alignas(64) int8_t a[kRowBlocks][kGroups][2][16 * 32];
  alignas(64) int8_t b[kGroups][2][8 * 64];
  alignas(64) int32_t sums[kBatch][32 * 32];
  alignas(64) float acc[kRowBlocks][32 * 32];
  alignas(64) float scales[kGroups][32];
  alignas(64) int32_t apart[kBatch][32 * 32];  // sums no tile store writes
  alignas(64) float sink[8][16];               // where the vector work's chains end
};

// tmm0..3 16 x 16 int32, tmm4/5 16 rows x 32 bytes, tmm6/7 8 rows x 64 bytes.
void configure_tiles() {
  dq4::amx::TileConfig config;
  for (int t = 0; t < 4; ++t) config.set(t, 16, 64);
  config.set(4, 16, 32);
  config.set(5, 16, 32);
  config.set(6, 8, 64);
  config.set(7, 8, 64);
  dq4::amx::load_config(config);
}

__attribute__((target("amx-tile"))) void release_tiles() { _tile_release(); }

__attribute__((target("amx-tile"))) inline void load_operands(const Operands& o, int rb, int g) {
  __asm__ volatile("" ::: "memory");
  _tile_loadd(4, o.a[rb][g][0], 32);
  _tile_loadd(5, o.a[rb][g][1], 32);
  _tile_loadd(6, o.b[g][0], 64);
  _tile_loadd(7, o.b[g][1], 64);
}

__attribute__((target("amx-tile,amx-int8"))) inline void dot() {
  _tile_dpbssd(0, 4, 6);
  _tile_dpbssd(1, 4, 7);
  _tile_dpbssd(2, 5, 6);
  _tile_dpbssd(3, 5, 7);
}

__attribute__((target("amx-tile,amx-int8"))) inline void load_and_dot(const Operands& o, int rb,
                                                                      int g) {
  load_operands(o, rb, g);
  dot();
}

__attribute__((target("amx-tile,amx-int8"))) inline void zero_sums() {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
}

__attribute__((target("amx-tile"))) inline void store_sums(int32_t* out) {
  _tile_stored(0, out, 128);
  _tile_stored(1, out + 16, 128);
  _tile_stored(2, out + 16 * 32, 128);
  _tile_stored(3, out + 16 * 32 + 16, 128);
}

// The kernel's fold (Avx512Simd::accumulate_groups): acc += f32(sums[i]) * scale[i], i in order.
// GCC 12 takes _mm512_cvtepi32_ps's undefined pass-through for an uninitialized read when the
// ISA comes from a target attribute rather than the file's flags.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) void fold(const int32_t (&sums)[kBatch][32 * 32],
                                             const Operands& o, int g0, float* acc) {
  for (int r = 0; r < 32; ++r)
    for (int j = 0; j < 2; ++j) {
      float* at = acc + r * 32 + 16 * j;
      __m512 sum = _mm512_load_ps(at);
      for (int i = 0; i < kBatch; ++i)
        sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(sums[i] + r * 32 + 16 * j)),
                              _mm512_loadu_ps(o.scales[g0 + i] + 16 * j), sum);
      _mm512_store_ps(at, sum);
    }
}

// A group's share of the fold's vector operations (a convert and an fma per 16 sums of each of
// its four units: 128) as FMAs on eight chains held in registers.
struct VectorWork {
  __m512 chain[8];
};

__attribute__((target("avx512f"))) inline void vector_work(VectorWork& v) {
  const __m512 scale = _mm512_set1_ps(0.5f), add = _mm512_set1_ps(1.0f);
  for (int i = 0; i < kUnitsPerGroup * 32 / 8; ++i)
    for (__m512& c : v.chain) c = _mm512_fmadd_ps(c, scale, add);
}

enum class Piece {
  dots,
  dots_stored,
  fold,
  dots_stored_fold,
  loads,
  stores,
  loads_stores,
  dots_stored_fold_apart,
  products,
  vector,
  products_vector,
  dots_vector,
  loads_vector,
  stores_vector
};

template <Piece kPiece>
__attribute__((target("avx512f,amx-tile,amx-int8"))) void run_pass(Operands& o) {
  VectorWork v;
  for (__m512& c : v.chain) c = _mm512_setzero_ps();
  constexpr bool kDots = kPiece == Piece::dots || kPiece == Piece::dots_vector;
  constexpr bool kProducts = kPiece == Piece::products || kPiece == Piece::products_vector;
  constexpr bool kStoredDots = kPiece == Piece::dots_stored || kPiece == Piece::dots_stored_fold ||
                               kPiece == Piece::dots_stored_fold_apart;
  constexpr bool kLoads =
      kPiece == Piece::loads || kPiece == Piece::loads_stores || kPiece == Piece::loads_vector;
  constexpr bool kStores =
      kPiece == Piece::stores || kPiece == Piece::loads_stores || kPiece == Piece::stores_vector;
  constexpr bool kVector = kPiece == Piece::vector || kPiece == Piece::products_vector ||
                           kPiece == Piece::dots_vector || kPiece == Piece::loads_vector ||
                           kPiece == Piece::stores_vector;
  for (int rb = 0; rb < kRowBlocks; ++rb) {
    if constexpr (kDots || kProducts) zero_sums();
    if constexpr (kProducts) load_operands(o, rb, 0);
    for (int g = 0; g < kGroups; ++g) {
      if constexpr (kProducts) dot();
      if constexpr (kLoads) load_operands(o, rb, g);
      if constexpr (kStores) store_sums(o.sums[g % kBatch]);
      if constexpr (kDots || kStoredDots) {
        if constexpr (kStoredDots) zero_sums();
        load_and_dot(o, rb, g);
        if constexpr (kStoredDots) store_sums(o.sums[g % kBatch]);
      }
      if constexpr (kVector) vector_work(v);
      if (g % kBatch == kBatch - 1) {
        if constexpr (kPiece == Piece::fold || kPiece == Piece::dots_stored_fold)
          fold(o.sums, o, g - (kBatch - 1), o.acc[rb]);
        if constexpr (kPiece == Piece::dots_stored_fold_apart)
          fold(o.apart, o, g - (kBatch - 1), o.acc[rb]);
      }
    }
    if constexpr (kDots || kProducts) store_sums(o.sums[0]);
  }
  if constexpr (kVector) {
    for (int i = 0; i < 8; ++i) _mm512_store_ps(o.sink[i], v.chain[i]);
    benchmark::DoNotOptimize(o.sink[0][0]);
  }
  benchmark::DoNotOptimize(o.acc[0][0]);
  benchmark::DoNotOptimize(o.sums[0][0]);
}
#pragma GCC diagnostic pop

template <Piece kPiece>
void unit_cost(benchmark::State& state) {
  if (!dq4::cpu_features().amx_int8) {
    state.SkipWithError(("no usable AMX-INT8: " + dq4::cpu_features().amx_status).c_str());
    return;
  }
  static Operands operands;
  std::memset(operands.a, 1, sizeof operands.a);
  std::memset(operands.b, 2, sizeof operands.b);
  for (auto& row : operands.scales)
    for (float& s : row) s = 0.5f;
  configure_tiles();
  for (auto _ : state) run_pass<kPiece>(operands);
  release_tiles();
  const double units = double{kRowBlocks} * kGroups * kUnitsPerGroup;
  state.counters["s_per_unit"] = benchmark::Counter(
      units, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

BENCHMARK(unit_cost<Piece::dots>)->Name("dots");
BENCHMARK(unit_cost<Piece::dots_stored>)->Name("dots_stored");
BENCHMARK(unit_cost<Piece::fold>)->Name("fold");
BENCHMARK(unit_cost<Piece::dots_stored_fold>)->Name("dots_stored_fold");
BENCHMARK(unit_cost<Piece::loads>)->Name("loads");
BENCHMARK(unit_cost<Piece::stores>)->Name("stores");
BENCHMARK(unit_cost<Piece::loads_stores>)->Name("loads_stores");
BENCHMARK(unit_cost<Piece::dots_stored_fold_apart>)->Name("dots_stored_fold_apart");
BENCHMARK(unit_cost<Piece::products>)->Name("products");
BENCHMARK(unit_cost<Piece::vector>)->Name("vector");
BENCHMARK(unit_cost<Piece::products_vector>)->Name("products_vector");
BENCHMARK(unit_cost<Piece::dots_vector>)->Name("dots_vector");
BENCHMARK(unit_cost<Piece::loads_vector>)->Name("loads_vector");
BENCHMARK(unit_cost<Piece::stores_vector>)->Name("stores_vector");

}  // namespace
#endif

BENCHMARK_MAIN();
