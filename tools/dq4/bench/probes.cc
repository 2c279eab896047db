#include "bench/probes.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>

#include "dq4/kernels/cpu_features.h"
#include "dq4/kernels/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dq4::cli::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Results are stored here so that the compiler cannot drop the loops that produce them.
volatile uint64_t g_sink;

// ---- last-level cache -----------------------------------------------------------------------

// "491520K" / "32M" / "1024" as in /sys/devices/system/cpu/cpu0/cache/index*/size.
size_t parse_sysfs_size(const std::string& text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return 0;
  if (*end == 'K') return static_cast<size_t>(v) << 10;
  if (*end == 'M') return static_cast<size_t>(v) << 20;
  if (*end == 'G') return static_cast<size_t>(v) << 30;
  return static_cast<size_t>(v);
}

size_t sysfs_last_level_cache() {
  size_t best = 0;
  int best_level = 0;
  for (int index = 0; index < 16; ++index) {
    const std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level_file(dir + "level"), size_file(dir + "size"), type_file(dir + "type");
    int level = 0;
    std::string size, type;
    if (!(level_file >> level) || !(size_file >> size)) continue;
    type_file >> type;
    if (type == "Instruction") continue;
    if (level > best_level) {
      best_level = level;
      best = parse_sysfs_size(size);
    }
  }
  return best;
}

// ---- read bandwidth -------------------------------------------------------------------------

constexpr size_t kReadChunk = 256;  // bytes per loop iteration of every reader

uint64_t fold(const uint64_t* lanes, int count) {
  uint64_t out = 0;
  for (int i = 0; i < count; ++i) out ^= lanes[i];
  return out;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) uint64_t fold_ymm(__m256i v) {
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  return fold(lanes, 4);
}

__attribute__((target("avx512f"))) uint64_t read_zmm(const uint8_t* p, size_t bytes) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < bytes; i += kReadChunk) {
    a0 = _mm512_xor_si512(a0, _mm512_load_si512(p + i));
    a1 = _mm512_xor_si512(a1, _mm512_load_si512(p + i + 64));
    a2 = _mm512_xor_si512(a2, _mm512_load_si512(p + i + 128));
    a3 = _mm512_xor_si512(a3, _mm512_load_si512(p + i + 192));
  }
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3)));
  return fold(lanes, 8);
}

__attribute__((target("avx2"))) uint64_t read_ymm(const uint8_t* p, size_t bytes) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < bytes; i += kReadChunk) {
    for (size_t j = 0; j < kReadChunk; j += 128) {
      a0 = _mm256_xor_si256(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + j)));
      a1 =
          _mm256_xor_si256(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + j + 32)));
      a2 =
          _mm256_xor_si256(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + j + 64)));
      a3 =
          _mm256_xor_si256(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + j + 96)));
    }
  }
  return fold_ymm(_mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3)));
}
#endif

// Plain 64-bit loads in four streams; compilers vectorize this with the baseline ISA.
uint64_t read_portable(const uint8_t* p, size_t bytes) {
  uint64_t a[4][4] = {};
  for (size_t i = 0; i < bytes; i += kReadChunk) {
    const uint64_t* w = reinterpret_cast<const uint64_t*>(p + i);
    for (int s = 0; s < 4; ++s)
      for (int j = 0; j < 4; ++j) a[s][j] ^= w[s * 8 + j] ^ w[s * 8 + 4 + j];
  }
  uint64_t out = 0;
  for (auto& s : a)
    for (uint64_t v : s) out ^= v;
  return out;
}

using Reader = uint64_t (*)(const uint8_t*, size_t);

Reader widest_reader() {
#if defined(__x86_64__)
  if (cpu_features().avx512f) return read_zmm;
  if (cpu_features().avx2) return read_ymm;
#endif
  return read_portable;
}

// Part `t` of `parts` of a buffer of `bytes`, in whole read chunks.
void part_range(size_t bytes, int64_t t, int64_t parts, size_t* begin, size_t* length) {
  const size_t chunks = bytes / kReadChunk;
  const size_t c0 = chunks * static_cast<size_t>(t) / static_cast<size_t>(parts);
  const size_t c1 = chunks * static_cast<size_t>(t + 1) / static_cast<size_t>(parts);
  *begin = c0 * kReadChunk;
  *length = (c1 - c0) * kReadChunk;
}

// Reads `bytes` at `from` once, split among `threads` threads of `pool`; returns the seconds.
double timed_read(ThreadPool& pool, int threads, const uint8_t* from, size_t bytes) {
  const Reader reader = widest_reader();
  const auto start = Clock::now();
  pool.run(
      threads,
      [&](int64_t t) {
        size_t begin = 0, length = 0;
        part_range(bytes, t, threads, &begin, &length);
        g_sink = reader(from + begin, length);
      },
      threads);
  return seconds_since(start);
}

// ---- int8 dot peak --------------------------------------------------------------------------

#if defined(__x86_64__)
// Inline assembly keeps every accumulator in its own register and each instruction in the loop
// exactly once (with intrinsics, GCC 12 adds a register copy per VPDPBUSD).
constexpr int kZmmAccumulators = 16;
constexpr int kYmmAccumulators = 12;
constexpr int kMaddubsPerIteration = 8;

__attribute__((target("avx512f,avx512vnni"))) uint64_t loop_avx512_vnni(int64_t iterations,
                                                                        int seed) {
  const __m512i a = _mm512_set1_epi32(seed), b = _mm512_set1_epi32(seed * 7 + 1);
  __m512i c0 = _mm512_set1_epi32(0), c1 = _mm512_set1_epi32(1), c2 = _mm512_set1_epi32(2),
          c3 = _mm512_set1_epi32(3);
  __m512i c4 = _mm512_set1_epi32(4), c5 = _mm512_set1_epi32(5), c6 = _mm512_set1_epi32(6),
          c7 = _mm512_set1_epi32(7);
  __m512i c8 = c0, c9 = c1, c10 = c2, c11 = c3, c12 = c4, c13 = c5, c14 = c6, c15 = c7;
  for (int64_t i = 0; i < iterations; ++i) {
    __asm__ volatile(
        "vpdpbusd %[b], %[a], %[c0]\n\tvpdpbusd %[b], %[a], %[c1]\n\tvpdpbusd %[b], %[a], %[c2]\n\t"
        "vpdpbusd %[b], %[a], %[c3]\n\tvpdpbusd %[b], %[a], %[c4]\n\tvpdpbusd %[b], %[a], %[c5]\n\t"
        "vpdpbusd %[b], %[a], %[c6]\n\tvpdpbusd %[b], %[a], %[c7]"
        : [c0] "+v"(c0), [c1] "+v"(c1), [c2] "+v"(c2), [c3] "+v"(c3), [c4] "+v"(c4), [c5] "+v"(c5),
          [c6] "+v"(c6), [c7] "+v"(c7)
        : [a] "v"(a), [b] "v"(b));
    __asm__ volatile(
        "vpdpbusd %[b], %[a], %[c0]\n\tvpdpbusd %[b], %[a], %[c1]\n\tvpdpbusd %[b], %[a], %[c2]\n\t"
        "vpdpbusd %[b], %[a], %[c3]\n\tvpdpbusd %[b], %[a], %[c4]\n\tvpdpbusd %[b], %[a], %[c5]\n\t"
        "vpdpbusd %[b], %[a], %[c6]\n\tvpdpbusd %[b], %[a], %[c7]"
        : [c0] "+v"(c8), [c1] "+v"(c9), [c2] "+v"(c10), [c3] "+v"(c11), [c4] "+v"(c12),
          [c5] "+v"(c13), [c6] "+v"(c14), [c7] "+v"(c15)
        : [a] "v"(a), [b] "v"(b));
  }
  const __m512i sum = _mm512_xor_si512(
      _mm512_xor_si512(_mm512_xor_si512(_mm512_xor_si512(c0, c1), _mm512_xor_si512(c2, c3)),
                       _mm512_xor_si512(_mm512_xor_si512(c4, c5), _mm512_xor_si512(c6, c7))),
      _mm512_xor_si512(_mm512_xor_si512(_mm512_xor_si512(c8, c9), _mm512_xor_si512(c10, c11)),
                       _mm512_xor_si512(_mm512_xor_si512(c12, c13), _mm512_xor_si512(c14, c15))));
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, sum);
  return fold(lanes, 8);
}

// The VEX encoding reaches ymm0-15 only, hence the "x" constraints.
__attribute__((target("avx2,avxvnni"))) uint64_t loop_avx_vnni(int64_t iterations, int seed) {
  const __m256i a = _mm256_set1_epi32(seed), b = _mm256_set1_epi32(seed * 7 + 1);
  __m256i c0 = _mm256_set1_epi32(0), c1 = _mm256_set1_epi32(1), c2 = _mm256_set1_epi32(2),
          c3 = _mm256_set1_epi32(3);
  __m256i c4 = _mm256_set1_epi32(4), c5 = _mm256_set1_epi32(5), c6 = c0, c7 = c1, c8 = c2, c9 = c3,
          c10 = c4, c11 = c5;
  for (int64_t i = 0; i < iterations; ++i) {
    __asm__ volatile(
        "%{vex%} vpdpbusd %[b], %[a], %[c0]\n\t%{vex%} vpdpbusd %[b], %[a], %[c1]\n\t"
        "%{vex%} vpdpbusd %[b], %[a], %[c2]\n\t%{vex%} vpdpbusd %[b], %[a], %[c3]\n\t"
        "%{vex%} vpdpbusd %[b], %[a], %[c4]\n\t%{vex%} vpdpbusd %[b], %[a], %[c5]"
        : [c0] "+x"(c0), [c1] "+x"(c1), [c2] "+x"(c2), [c3] "+x"(c3), [c4] "+x"(c4), [c5] "+x"(c5)
        : [a] "x"(a), [b] "x"(b));
    __asm__ volatile(
        "%{vex%} vpdpbusd %[b], %[a], %[c0]\n\t%{vex%} vpdpbusd %[b], %[a], %[c1]\n\t"
        "%{vex%} vpdpbusd %[b], %[a], %[c2]\n\t%{vex%} vpdpbusd %[b], %[a], %[c3]\n\t"
        "%{vex%} vpdpbusd %[b], %[a], %[c4]\n\t%{vex%} vpdpbusd %[b], %[a], %[c5]"
        : [c0] "+x"(c6), [c1] "+x"(c7), [c2] "+x"(c8), [c3] "+x"(c9), [c4] "+x"(c10), [c5] "+x"(c11)
        : [a] "x"(a), [b] "x"(b));
  }
  const __m256i sum = _mm256_xor_si256(
      _mm256_xor_si256(_mm256_xor_si256(_mm256_xor_si256(c0, c1), _mm256_xor_si256(c2, c3)),
                       _mm256_xor_si256(_mm256_xor_si256(c4, c5), _mm256_xor_si256(c6, c7))),
      _mm256_xor_si256(_mm256_xor_si256(c8, c9), _mm256_xor_si256(c10, c11)));
  return fold_ymm(sum);
}

// u8 x s8 without VNNI: VPMADDUBSW, 32 multiplies with adjacent pairs summed to int16, the one
// multiplying instruction of every AVX2 int8 dot product. The adds that complete a dot product
// (int16 and int32 sums, the widening VPMADDWD) share its ports or others depending on the core,
// and a kernel chooses how few it needs (dq4's avx2 W4A8 widens once per 32 k), so the bound is
// the multiplies alone: independent destinations, each instruction once per iteration.
__attribute__((target("avx2"))) uint64_t loop_avx2_maddubs(int64_t iterations, int seed) {
  const __m256i a = _mm256_set1_epi32(seed), b = _mm256_set1_epi32(seed * 7 + 1);
  __m256i p0 = a, p1 = a, p2 = a, p3 = a, p4 = a, p5 = a, p6 = a, p7 = a;
  for (int64_t i = 0; i < iterations; ++i) {
#define DQ4_MADDUBS(p) "vpmaddubsw %[b], %[a], %[" p "]\n\t"
    __asm__ volatile(DQ4_MADDUBS("p0") DQ4_MADDUBS("p1") DQ4_MADDUBS("p2") DQ4_MADDUBS("p3")
                         DQ4_MADDUBS("p4") DQ4_MADDUBS("p5") DQ4_MADDUBS("p6") DQ4_MADDUBS("p7")
                     : [p0] "=x"(p0), [p1] "=x"(p1), [p2] "=x"(p2), [p3] "=x"(p3), [p4] "=x"(p4),
                       [p5] "=x"(p5), [p6] "=x"(p6), [p7] "=x"(p7)
                     : [a] "x"(a), [b] "x"(b));
#undef DQ4_MADDUBS
  }
  return fold_ymm(
      _mm256_xor_si256(_mm256_xor_si256(_mm256_xor_si256(p0, p1), _mm256_xor_si256(p2, p3)),
                       _mm256_xor_si256(_mm256_xor_si256(p4, p5), _mm256_xor_si256(p6, p7))));
}

// TDPBUSD on the tile unit: four independent 16 x 16 int32 accumulators (tmm0..3) over one A
// (tmm4) and one B (tmm6) tile of 16 x 64 bytes, 16 x 16 x 64 multiply-adds each. Runs only where
// the probe found AMX usable (the OS granted this process the tile state).
constexpr int kTileAccumulators = 4;

__attribute__((target("amx-tile,amx-int8"))) uint64_t loop_amx_int8(int64_t iterations, int seed) {
  alignas(64) uint8_t config[64] = {};
  config[0] = 1;  // palette 1
  for (int t : {0, 1, 2, 3, 4, 6}) {
    config[16 + 2 * t] = 64;  // bytes per row
    config[48 + t] = 16;      // rows
  }
  alignas(64) uint8_t operand[16 * 64];
  for (int i = 0; i < 16 * 64; ++i) operand[i] = static_cast<uint8_t>(seed * 7 + i);
  // GCC 12's intrinsics declare too little of the memory these read (x86_amx.cc).
  __asm__ volatile("ldtilecfg %0" ::"m"(config) : "memory");
  _tile_loadd(4, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t i = 0; i < iterations; ++i) {
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 6);
    _tile_dpbusd(2, 4, 6);
    _tile_dpbusd(3, 4, 6);
  }
  alignas(64) uint64_t sums[4][16 * 8];
  _tile_stored(0, sums[0], 64);
  _tile_stored(1, sums[1], 64);
  _tile_stored(2, sums[2], 64);
  _tile_stored(3, sums[3], 64);
  _tile_release();
  return fold(sums[0], 4 * 16 * 8);
}

// c = a * b + c on independent accumulators; a = b = 2^-10 keeps every value normal and finite
// for far more iterations than a probe runs.
constexpr int kFmaAccumulators = 16;
constexpr int kFmaYmmAccumulators = 12;

__attribute__((target("avx512f"))) uint64_t loop_fma_zmm(int64_t iterations, int seed) {
  const __m512 a = _mm512_set1_ps(0x1p-10f), b = _mm512_set1_ps(0x1p-10f * (1 + seed % 2));
  __m512 c0 = _mm512_set1_ps(0), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  __m512 c8 = c0, c9 = c0, c10 = c0, c11 = c0, c12 = c0, c13 = c0, c14 = c0, c15 = c0;
  for (int64_t i = 0; i < iterations; ++i) {
    __asm__ volatile(
        "vfmadd231ps %[b], %[a], %[c0]\n\tvfmadd231ps %[b], %[a], %[c1]\n\t"
        "vfmadd231ps %[b], %[a], %[c2]\n\tvfmadd231ps %[b], %[a], %[c3]\n\t"
        "vfmadd231ps %[b], %[a], %[c4]\n\tvfmadd231ps %[b], %[a], %[c5]\n\t"
        "vfmadd231ps %[b], %[a], %[c6]\n\tvfmadd231ps %[b], %[a], %[c7]"
        : [c0] "+v"(c0), [c1] "+v"(c1), [c2] "+v"(c2), [c3] "+v"(c3), [c4] "+v"(c4), [c5] "+v"(c5),
          [c6] "+v"(c6), [c7] "+v"(c7)
        : [a] "v"(a), [b] "v"(b));
    __asm__ volatile(
        "vfmadd231ps %[b], %[a], %[c0]\n\tvfmadd231ps %[b], %[a], %[c1]\n\t"
        "vfmadd231ps %[b], %[a], %[c2]\n\tvfmadd231ps %[b], %[a], %[c3]\n\t"
        "vfmadd231ps %[b], %[a], %[c4]\n\tvfmadd231ps %[b], %[a], %[c5]\n\t"
        "vfmadd231ps %[b], %[a], %[c6]\n\tvfmadd231ps %[b], %[a], %[c7]"
        : [c0] "+v"(c8), [c1] "+v"(c9), [c2] "+v"(c10), [c3] "+v"(c11), [c4] "+v"(c12),
          [c5] "+v"(c13), [c6] "+v"(c14), [c7] "+v"(c15)
        : [a] "v"(a), [b] "v"(b));
  }
  const __m512 sum =
      _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                                  _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7))),
                    _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)),
                                  _mm512_add_ps(_mm512_add_ps(c12, c13), _mm512_add_ps(c14, c15))));
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_castps_si512(sum));
  return fold(lanes, 8);
}

// The VEX encoding reaches ymm0-15 only, hence the "x" constraints.
__attribute__((target("avx2,fma"))) uint64_t loop_fma_ymm(int64_t iterations, int seed) {
  const __m256 a = _mm256_set1_ps(0x1p-10f), b = _mm256_set1_ps(0x1p-10f * (1 + seed % 2));
  __m256 c0 = _mm256_set1_ps(0), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  __m256 c8 = c0, c9 = c0, c10 = c0, c11 = c0;
  for (int64_t i = 0; i < iterations; ++i) {
    __asm__ volatile(
        "vfmadd231ps %[b], %[a], %[c0]\n\tvfmadd231ps %[b], %[a], %[c1]\n\t"
        "vfmadd231ps %[b], %[a], %[c2]\n\tvfmadd231ps %[b], %[a], %[c3]\n\t"
        "vfmadd231ps %[b], %[a], %[c4]\n\tvfmadd231ps %[b], %[a], %[c5]"
        : [c0] "+x"(c0), [c1] "+x"(c1), [c2] "+x"(c2), [c3] "+x"(c3), [c4] "+x"(c4), [c5] "+x"(c5)
        : [a] "x"(a), [b] "x"(b));
    __asm__ volatile(
        "vfmadd231ps %[b], %[a], %[c0]\n\tvfmadd231ps %[b], %[a], %[c1]\n\t"
        "vfmadd231ps %[b], %[a], %[c2]\n\tvfmadd231ps %[b], %[a], %[c3]\n\t"
        "vfmadd231ps %[b], %[a], %[c4]\n\tvfmadd231ps %[b], %[a], %[c5]"
        : [c0] "+x"(c6), [c1] "+x"(c7), [c2] "+x"(c8), [c3] "+x"(c9), [c4] "+x"(c10), [c5] "+x"(c11)
        : [a] "x"(a), [b] "x"(b));
  }
  const __m256 sum =
      _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                                  _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7))),
                    _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
  return fold_ymm(_mm256_castps_si256(sum));
}
#endif

struct PeakLoop {
  uint64_t (*loop)(int64_t iterations, int seed);
  double ops_per_iteration;  // 2 x int8 multiply-adds
};

PeakLoop peak_loop(DotPeak peak) {
  switch (peak) {
#if defined(__x86_64__)
    case DotPeak::avx512_vnni:
      return {loop_avx512_vnni, 2.0 * 64 * kZmmAccumulators};
    case DotPeak::avx_vnni:
      return {loop_avx_vnni, 2.0 * 32 * kYmmAccumulators};
    case DotPeak::avx2_maddubs:
      return {loop_avx2_maddubs, 2.0 * 32 * kMaddubsPerIteration};
    case DotPeak::amx_int8:
      return {loop_amx_int8, 2.0 * 16 * 16 * 64 * kTileAccumulators};
#endif
    default:
      return {nullptr, 0};
  }
}

// The probe of the instruction the W4A8 kernel named `isa` is built on, or none.
DotPeak dot_peak_of(std::string_view isa) {
  if (isa == "amx") return DotPeak::amx_int8;
  if (isa == "avx512_vnni") return DotPeak::avx512_vnni;
  if (isa == "avx_vnni") return DotPeak::avx_vnni;
  if (isa == "avx2") return DotPeak::avx2_maddubs;
  return DotPeak::none;
}

// The probe of `kernel`'s own instruction when this build holds one and this CPU runs `kernel`,
// else none.
DotPeak own_dot_peak(const w4a8::Kernel& kernel) {
  const DotPeak peak = dot_peak_of(w4a8::family().name(kernel));
  return peak_loop(peak).loop != nullptr && w4a8::family().supported(kernel) ? peak : DotPeak::none;
}

PeakLoop fma_loop(FmaPeak peak) {
  switch (peak) {
#if defined(__x86_64__)
    case FmaPeak::avx512:
      return {loop_fma_zmm, 2.0 * 16 * kFmaAccumulators};
    case FmaPeak::avx2:
      return {loop_fma_ymm, 2.0 * 8 * kFmaYmmAccumulators};
#endif
    default:
      return {nullptr, 0};
  }
}

// Runs `loop` on `threads` threads of `pool` at once; returns the seconds the slowest one took.
double timed_peak_run(ThreadPool& pool, const PeakLoop& loop, int threads, int64_t iterations) {
  const auto start = Clock::now();
  pool.run(
      threads, [&](int64_t t) { g_sink = loop.loop(iterations, static_cast<int>(t) + 3); },
      threads);
  return seconds_since(start);
}

// `runs` rates of `loop` (sized to about 20 ms on one thread) per thread count.
std::vector<DotPeakRate> peak_rates(ThreadPool& pool, const PeakLoop& loop,
                                    const std::vector<int>& threads, int runs) {
  if (loop.loop == nullptr) return {};
  // Size the loop to take about 20 ms on one thread.
  int64_t iterations = int64_t{1} << 14;
  for (double s = timed_peak_run(pool, loop, 1, iterations); s < 0.02;
       s = timed_peak_run(pool, loop, 1, iterations))
    iterations *= s < 0.002 ? 8 : 2;
  std::vector<std::vector<double>> samples(threads.size());
  for (int run = 0; run < runs; ++run) {
    for (size_t i = 0; i < threads.size(); ++i) {
      const double s = timed_peak_run(pool, loop, threads[i], iterations);
      samples[i].push_back(loop.ops_per_iteration * static_cast<double>(iterations) * threads[i] /
                           s * 1e-9);
    }
  }
  std::vector<DotPeakRate> out;
  for (size_t i = 0; i < threads.size(); ++i) out.push_back({threads[i], summarize(samples[i])});
  return out;
}

}  // namespace

CacheSize last_level_cache() {
  // The kernel's sysfs first: it reports the cache cpu0 shares (an AMD CCX: 32 MiB), where glibc's
  // sysconf can report the whole socket's L3 (hundreds of MiB on a VM), which only makes the cold
  // copies 8x larger and the run slower.
  if (const size_t sysfs = sysfs_last_level_cache(); sysfs > 0)
    return {sysfs, "/sys/devices/system/cpu/cpu0/cache"};
#if defined(_SC_LEVEL3_CACHE_SIZE)
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return {static_cast<size_t>(l3), "sysconf(_SC_LEVEL3_CACHE_SIZE)"};
#endif
  return {size_t{32} << 20, "fallback (no cache size reported)"};
}

void read_through(const void* data, size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  const size_t body = bytes / kReadChunk * kReadChunk;
  uint64_t sum = widest_reader()(p, body);
  for (size_t i = body; i < bytes; ++i) sum += p[i];
  g_sink = sum;
}

ReadBandwidthProbe::ReadBandwidthProbe(size_t bytes) {
  const size_t unit = size_t{2} << 20;
  buffer_ = AlignedBuffer(std::max(unit, bytes / unit * unit));
  fill();
}

// Written, not only touched: a read of a dropped page would map the shared zero page, which
// stays in the cache and reads far faster than memory.
void ReadBandwidthProbe::fill() {
  ThreadPool& pool = ThreadPool::global();
  const int parts = pool.size();
  pool.run(
      parts,
      [&](int64_t t) {
        size_t begin = 0, length = 0;
        part_range(bytes(), t, parts, &begin, &length);
        std::memset(buffer_.data() + begin, 0x5a + static_cast<int>(t), length);
      },
      parts);
}

void ReadBandwidthProbe::release() {
  madvise(buffer_.data(), bytes(), MADV_DONTNEED);
  released_ = true;
}

double ReadBandwidthProbe::read_next(ThreadPool& pool, int threads, size_t bytes) {
  if (released_) fill();
  released_ = false;
  if (cursor_ + bytes > buffer_.size()) cursor_ = 0;
  const double s = timed_read(pool, threads, buffer_.data() + cursor_, bytes);
  cursor_ += bytes;
  return s;
}

std::vector<Bandwidth> ReadBandwidthProbe::measure(const std::vector<int>& threads, int passes) {
  if (released_) fill();
  released_ = false;
  std::vector<std::vector<double>> samples(threads.size());
  for (int pass = -1; pass < passes; ++pass) {  // pass -1 warms up
    for (size_t i = 0; i < threads.size(); ++i) {
      const double s = timed_read(ThreadPool::global(), threads[i], buffer_.data(), bytes());
      if (pass >= 0) samples[i].push_back(static_cast<double>(bytes()) / s * 1e-9);
    }
  }
  std::vector<Bandwidth> out;
  for (size_t i = 0; i < threads.size(); ++i) out.push_back({threads[i], summarize(samples[i])});
  return out;
}

DotPeak dot_peak_for(const w4a8::Kernel& kernel) {
  if (const DotPeak own = own_dot_peak(kernel); own != DotPeak::none) return own;
  const std::vector<const w4a8::Kernel*>& kernels = w4a8::family().kernels();
  for (auto it = kernels.rbegin(); it != kernels.rend(); ++it)
    if (const DotPeak best = own_dot_peak(**it); best != DotPeak::none) return best;
  return DotPeak::none;
}

const char* dot_peak_name(DotPeak peak) {
  switch (peak) {
    case DotPeak::avx512_vnni:
      return "VPDPBUSD zmm";
    case DotPeak::avx_vnni:
      return "VPDPBUSD ymm (VEX)";
    case DotPeak::avx2_maddubs:
      return "VPMADDUBSW ymm";
    case DotPeak::amx_int8:
      return "TDPBUSD 16x16x64";
    default:
      return "none";
  }
}

std::vector<DotPeakRate> dot_peak(DotPeak peak, const std::vector<int>& threads, int runs,
                                  ThreadPool* pool) {
  return peak_rates(pool != nullptr ? *pool : ThreadPool::global(), peak_loop(peak), threads, runs);
}

FmaPeak fma_peak_of(std::string_view isa) {
  FmaPeak peak = FmaPeak::none;
  if (isa == "avx512f") peak = FmaPeak::avx512;
  if (isa == "avx2") peak = FmaPeak::avx2;
  return fma_loop(peak).loop != nullptr ? peak : FmaPeak::none;
}

const char* fma_peak_name(FmaPeak peak) {
  switch (peak) {
    case FmaPeak::avx512:
      return "VFMADD231PS zmm";
    case FmaPeak::avx2:
      return "VFMADD231PS ymm";
    default:
      return "none";
  }
}

std::vector<DotPeakRate> fma_peak(FmaPeak peak, const std::vector<int>& threads, int runs) {
  return peak_rates(ThreadPool::global(), fma_loop(peak), threads, runs);
}

}  // namespace dq4::cli::bench
