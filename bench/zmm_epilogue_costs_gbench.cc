// Google Benchmark of what a groupwise epilogue costs beside VPDPBUSD on this core, in the pattern
// of the AVX512-VNNI W4A8 tiles (src/kernels/w4a8/x86_zmm_w4a8.h): 16 zmm int32 accumulators (4
// rows x 4 column vectors) each fed 8 VPDPBUSD per pass, one group of 32 k, with the operands in
// registers so that nothing but the execution units sets the pace. Every case reports seconds
// per pass (128 VPDPBUSD) beside what each pass adds for its 16 accumulators:
//
//   dots         nothing: the VPDPBUSD rate alone
//   convert      VCVTDQ2PS of each accumulator
//   add          VCVTDQ2PS, then VADDPS into f32 sums in L1 (load, add, store)
//   fma          VCVTDQ2PS, then VFMADD with a scale into f32 sums in L1
//   fold         the same, the accumulators then restarting from a broadcast: the groupwise
//                epilogue as the tiles run it
//   mul_add      VCVTDQ2PS, VMULPS by the scale, VADDPS: the fma as an exact product (a group
//                sum of at most 2^15 times a bf16 scale is exact in f32) and an add
//   madd_add     VPMADDWD of each accumulator by the scale's 8-bit significand, VCVTDQ2PS,
//                VSCALEFPS by its power of two, VADDPS: the same exact product with the integer
//                multiplier
//   scalef_add   VCVTDQ2PS, VSCALEFPS, VADDPS: a power-of-two scale, no multiplier at all
//
// An operation that issues on ports of its own adds nothing to `dots`; one that shares
// VPDPBUSD's ports adds its own issue time. The tiles' groupwise floor is `fold` against `dots`;
// mul_add and madd_add show whether a bit-exact epilogue without the fma could avoid those ports.

#include <benchmark/benchmark.h>

#include <cstdint>

#include "dq4/kernels/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace {

enum class Epilogue { none, convert, add, fma, fold, mul_add, madd_add, scalef_add };

constexpr int kRows = 4, kVectors = 4, kSteps = 8;

template <Epilogue E>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void passes(
    benchmark::State& state) {
  alignas(64) float sums[kRows][kVectors][16] = {};
  __m512i acc[kRows][kVectors];
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < kVectors; ++j) acc[r][j] = _mm512_set1_epi32(r * kVectors + j);
  __m512i w[kVectors];
  for (int j = 0; j < kVectors; ++j) w[j] = _mm512_set1_epi8(static_cast<char>(j + 1));
  const __m512i a = _mm512_set1_epi8(3);
  const __m512 scale = _mm512_set1_ps(0.5f);
  const __m512i significand = _mm512_set1_epi32(0x80);
  const __m512 exponent = _mm512_set1_ps(-8.0f);
  int32_t start = 0;
  for (auto _ : state) {
#pragma GCC unroll 8
    for (int s = 0; s < kSteps; ++s)
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < kVectors; ++j) acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], w[j], a);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < kVectors; ++j) {
        if constexpr (E == Epilogue::convert) {
          __m512 f = _mm512_cvtepi32_ps(acc[r][j]);
          __asm__ volatile("" : "+v"(f));
        } else if constexpr (E == Epilogue::fma || E == Epilogue::fold) {
          _mm512_store_ps(sums[r][j], _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][j]), scale,
                                                      _mm512_load_ps(sums[r][j])));
          if constexpr (E == Epilogue::fold) acc[r][j] = _mm512_set1_epi32(start + r);
        } else if constexpr (E != Epilogue::none) {  // a term added into the f32 sums
          __m512 term;
          if constexpr (E == Epilogue::add)
            term = _mm512_cvtepi32_ps(acc[r][j]);
          else if constexpr (E == Epilogue::mul_add)
            term = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[r][j]), scale);
          else if constexpr (E == Epilogue::madd_add)
            term = _mm512_scalef_ps(_mm512_cvtepi32_ps(_mm512_madd_epi16(acc[r][j], significand)),
                                    exponent);
          else
            term = _mm512_scalef_ps(_mm512_cvtepi32_ps(acc[r][j]), exponent);
          _mm512_store_ps(sums[r][j], _mm512_add_ps(term, _mm512_load_ps(sums[r][j])));
        }
      }
    ++start;
  }
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < kVectors; ++j) benchmark::DoNotOptimize(acc[r][j]);
  benchmark::DoNotOptimize(sums);
}

template <Epilogue E>
void bm(benchmark::State& state) {
  const dq4::CpuFeatures& f = dq4::cpu_features();
  if (!(f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni)) {
    state.SkipWithError("this CPU has no AVX512-VNNI");
    return;
  }
  passes<E>(state);
  state.counters["vpdpbusd_per_s"] =
      benchmark::Counter(kRows * kVectors * kSteps, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(bm<Epilogue::none>)->Name("dots");
BENCHMARK(bm<Epilogue::convert>)->Name("convert");
BENCHMARK(bm<Epilogue::add>)->Name("add");
BENCHMARK(bm<Epilogue::fma>)->Name("fma");
BENCHMARK(bm<Epilogue::fold>)->Name("fold");
BENCHMARK(bm<Epilogue::mul_add>)->Name("mul_add");
BENCHMARK(bm<Epilogue::madd_add>)->Name("madd_add");
BENCHMARK(bm<Epilogue::scalef_add>)->Name("scalef_add");

}  // namespace

#endif

BENCHMARK_MAIN();
