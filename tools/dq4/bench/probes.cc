#include "bench/probes.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>

#include "dq4/cpu_features.h"
#include "dq4/thread_pool.h"

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
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
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
      a1 = _mm256_xor_si256(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + j + 32)));
      a2 = _mm256_xor_si256(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + j + 64)));
      a3 = _mm256_xor_si256(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + j + 96)));
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

struct PageBuffer {
  explicit PageBuffer(size_t bytes) : size(bytes) {
    data = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
    if (data == nullptr) throw std::bad_alloc();
  }
  ~PageBuffer() { std::free(data); }
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  uint8_t* data;
  size_t size;
};

// Part `t` of `parts` of a buffer of `bytes`, in whole read chunks.
void part_range(size_t bytes, int64_t t, int64_t parts, size_t* begin, size_t* length) {
  const size_t chunks = bytes / kReadChunk;
  const size_t c0 = chunks * static_cast<size_t>(t) / static_cast<size_t>(parts);
  const size_t c1 = chunks * static_cast<size_t>(t + 1) / static_cast<size_t>(parts);
  *begin = c0 * kReadChunk;
  *length = (c1 - c0) * kReadChunk;
}

// ---- int8 dot peak --------------------------------------------------------------------------

#if defined(__x86_64__)
constexpr int kZmmAccumulators = 16;
constexpr int kYmmAccumulators = 12;
constexpr int kMaddubsChains = 6;

__attribute__((target("avx512f,avx512vnni"))) uint64_t loop_avx512_vnni(int64_t iterations, int seed) {
  __m512i a = _mm512_set1_epi32(seed), b = _mm512_set1_epi32(seed * 7 + 1);
  __m512i acc[kZmmAccumulators];
  for (int j = 0; j < kZmmAccumulators; ++j) acc[j] = _mm512_set1_epi32(j);
  for (int64_t i = 0; i < iterations; ++i) {
    __asm__("" : "+v"(a), "+v"(b));  // opaque sources: nothing can be folded
#pragma GCC unroll 16
    for (int j = 0; j < kZmmAccumulators; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
  }
  __m512i sum = acc[0];
  for (int j = 1; j < kZmmAccumulators; ++j) sum = _mm512_xor_si512(sum, acc[j]);
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, sum);
  return fold(lanes, 8);
}

__attribute__((target("avx2,avxvnni"))) uint64_t loop_avx_vnni(int64_t iterations, int seed) {
  __m256i a = _mm256_set1_epi32(seed), b = _mm256_set1_epi32(seed * 7 + 1);
  __m256i acc[kYmmAccumulators];
  for (int j = 0; j < kYmmAccumulators; ++j) acc[j] = _mm256_set1_epi32(j);
  for (int64_t i = 0; i < iterations; ++i) {
    __asm__("" : "+x"(a), "+x"(b));
#pragma GCC unroll 12
    for (int j = 0; j < kYmmAccumulators; ++j) acc[j] = _mm256_dpbusd_avx_epi32(acc[j], a, b);
  }
  __m256i sum = acc[0];
  for (int j = 1; j < kYmmAccumulators; ++j) sum = _mm256_xor_si256(sum, acc[j]);
  return fold_ymm(sum);
}

// u8 x s8 -> int32 without VNNI: VPMADDUBSW (pairs to int16), VPMADDWD by ones (to int32), VPADDD.
__attribute__((target("avx2"))) uint64_t loop_avx2_maddubs(int64_t iterations, int seed) {
  __m256i a0 = _mm256_set1_epi32(seed), a1 = _mm256_set1_epi32(seed + 1), a2 = _mm256_set1_epi32(seed + 2);
  __m256i b0 = _mm256_set1_epi32(seed * 7 + 1), b1 = _mm256_set1_epi32(seed * 5 + 3);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[kMaddubsChains];
  for (int j = 0; j < kMaddubsChains; ++j) acc[j] = _mm256_set1_epi32(j);
  for (int64_t i = 0; i < iterations; ++i) {
    // Every product must be recomputed each iteration, as with fresh weights in a kernel.
    __asm__("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(b0), "+x"(b1));
    const __m256i a[3] = {a0, a1, a2};
#pragma GCC unroll 6
    for (int j = 0; j < kMaddubsChains; ++j) {
      const __m256i p16 = _mm256_maddubs_epi16(a[j % 3], j < 3 ? b0 : b1);
      acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(p16, ones));
    }
  }
  __m256i sum = acc[0];
  for (int j = 1; j < kMaddubsChains; ++j) sum = _mm256_xor_si256(sum, acc[j]);
  return fold_ymm(sum);
}
#endif

struct PeakLoop {
  uint64_t (*loop)(int64_t iterations, int seed);
  double ops_per_iteration;  // 2 x int8 multiply-adds
};

PeakLoop peak_loop(DotPeak peak) {
  switch (peak) {
#if defined(__x86_64__)
    case DotPeak::avx512_vnni: return {loop_avx512_vnni, 2.0 * 64 * kZmmAccumulators};
    case DotPeak::avx_vnni: return {loop_avx_vnni, 2.0 * 32 * kYmmAccumulators};
    case DotPeak::avx2_maddubs: return {loop_avx2_maddubs, 2.0 * 32 * kMaddubsChains};
#endif
    default: return {nullptr, 0};
  }
}

bool cpu_has(DotPeak peak) {
  const CpuFeatures& f = cpu_features();
  switch (peak) {
    case DotPeak::avx512_vnni: return f.avx512f && f.avx512_vnni;
    case DotPeak::avx_vnni: return f.avx2 && f.avx_vnni;
    case DotPeak::avx2_maddubs: return f.avx2;
    default: return false;
  }
}

// Runs `loop` on `threads` threads at once; returns the seconds the slowest one took.
double timed_peak_run(const PeakLoop& loop, int threads, int64_t iterations) {
  const auto start = Clock::now();
  ThreadPool::global().run(
      threads, [&](int64_t t) { g_sink = loop.loop(iterations, static_cast<int>(t) + 3); }, threads);
  return seconds_since(start);
}

}  // namespace

CacheSize last_level_cache() {
#if defined(_SC_LEVEL3_CACHE_SIZE)
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return {static_cast<size_t>(l3), "sysconf(_SC_LEVEL3_CACHE_SIZE)"};
#endif
  if (const size_t sysfs = sysfs_last_level_cache(); sysfs > 0)
    return {sysfs, "/sys/devices/system/cpu/cpu0/cache"};
  return {size_t{32} << 20, "fallback (no cache size reported)"};
}

std::vector<Bandwidth> read_bandwidth(size_t bytes, const std::vector<int>& threads, int passes) {
  const size_t unit = size_t{2} << 20;
  bytes = std::max(unit, bytes / unit * unit);
  PageBuffer buffer(bytes);
  ThreadPool& pool = ThreadPool::global();
  const int touch_threads = pool.size();
  pool.run(
      touch_threads,
      [&](int64_t t) {
        size_t begin = 0, length = 0;
        part_range(bytes, t, touch_threads, &begin, &length);
        std::memset(buffer.data + begin, 0x5a + static_cast<int>(t), length);
      },
      touch_threads);

  const Reader reader = widest_reader();
  std::vector<std::vector<double>> samples(threads.size());
  for (int pass = -1; pass < passes; ++pass) {  // pass -1 warms up
    for (size_t i = 0; i < threads.size(); ++i) {
      const int nt = threads[i];
      const auto start = Clock::now();
      pool.run(
          nt,
          [&](int64_t t) {
            size_t begin = 0, length = 0;
            part_range(bytes, t, nt, &begin, &length);
            g_sink = reader(buffer.data + begin, length);
          },
          nt);
      const double s = seconds_since(start);
      if (pass >= 0) samples[i].push_back(static_cast<double>(bytes) / s * 1e-9);
    }
  }
  std::vector<Bandwidth> out;
  for (size_t i = 0; i < threads.size(); ++i) out.push_back({threads[i], summarize(samples[i])});
  return out;
}

DotPeak dot_peak_for(std::string_view kernel_name) {
  DotPeak wanted = DotPeak::none;
  if (kernel_name == "avx512_vnni") wanted = DotPeak::avx512_vnni;
  if (kernel_name == "avx_vnni") wanted = DotPeak::avx_vnni;
  if (kernel_name == "avx2") wanted = DotPeak::avx2_maddubs;
  if (wanted != DotPeak::none) return cpu_has(wanted) ? wanted : DotPeak::none;
  for (DotPeak best : {DotPeak::avx512_vnni, DotPeak::avx_vnni, DotPeak::avx2_maddubs})
    if (cpu_has(best) && peak_loop(best).loop != nullptr) return best;
  return DotPeak::none;
}

const char* dot_peak_name(DotPeak peak) {
  switch (peak) {
    case DotPeak::avx512_vnni: return "VPDPBUSD zmm";
    case DotPeak::avx_vnni: return "VPDPBUSD ymm (VEX)";
    case DotPeak::avx2_maddubs: return "VPMADDUBSW+VPMADDWD+VPADDD ymm";
    default: return "none";
  }
}

std::vector<DotPeakRate> dot_peak(DotPeak peak, const std::vector<int>& threads, int runs) {
  const PeakLoop loop = peak_loop(peak);
  if (loop.loop == nullptr || !cpu_has(peak)) return {};
  // Size the loop to take about 20 ms on one thread.
  int64_t iterations = int64_t{1} << 14;
  for (double s = timed_peak_run(loop, 1, iterations); s < 0.02; s = timed_peak_run(loop, 1, iterations))
    iterations *= s < 0.002 ? 8 : 2;
  std::vector<std::vector<double>> samples(threads.size());
  for (int run = 0; run < runs; ++run) {
    for (size_t i = 0; i < threads.size(); ++i) {
      const double s = timed_peak_run(loop, threads[i], iterations);
      samples[i].push_back(loop.ops_per_iteration * static_cast<double>(iterations) * threads[i] / s * 1e-9);
    }
  }
  std::vector<DotPeakRate> out;
  for (size_t i = 0; i < threads.size(); ++i) out.push_back({threads[i], summarize(samples[i])});
  return out;
}

}  // namespace dq4::cli::bench
