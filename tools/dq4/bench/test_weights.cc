#include "bench/test_weights.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "dq4/kernels/thread_pool.h"

namespace dq4::cli::bench {
namespace {

// splitmix64: fast, and good enough for benchmark operands.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

int4::WeightSource Int4Weights::source() const {
  int4::WeightSource s;
  s.n = n;
  s.k = k;
  s.group_size = group;
  s.packed = nibbles;
  s.scales = scales.data();
  s.scale_type = int4::ScaleType::f32;
  return s;
}

AlignedBuffer Int4Weights::dequantized() const {
  AlignedBuffer out(static_cast<size_t>(n * k) * sizeof(float));
  float* w = reinterpret_cast<float*>(out.data());
  const int64_t words = (k + 7) / 8, row_groups = groups(), g_len = group == 0 ? k : group;
  ThreadPool& pool = ThreadPool::global();
  const int64_t tasks = std::min<int64_t>(n, int64_t{4} * pool.size());
  pool.run(tasks, [&](int64_t t) {
    for (int64_t r = n * t / tasks; r < n * (t + 1) / tasks; ++r) {
      const int32_t* src = nibbles + r * words;
      const float* scale = scales.data() + r * row_groups;
      for (int64_t c = 0; c < k; ++c) {
        const int q =
            static_cast<int>((static_cast<uint32_t>(src[c / 8]) >> (4 * (c % 8))) & 0xf) - 8;
        w[r * k + c] = static_cast<float>(q) * scale[c / g_len];
      }
    }
  });
  return out;
}

std::vector<int32_t> random_nibbles(int64_t n, int64_t k, uint64_t seed) {
  const int64_t words = (k + 7) / 8;
  std::vector<int32_t> out(static_cast<size_t>(n * words));
  ThreadPool& pool = ThreadPool::global();
  const int64_t tasks = std::min<int64_t>(n, int64_t{4} * pool.size());
  pool.run(tasks, [&](int64_t t) {
    const int64_t end = n * (t + 1) / tasks * words;
    for (int64_t i = n * t / tasks * words; i < end; i += 2) {
      const uint64_t bits = mix(seed * 0x100000001b3ull + static_cast<uint64_t>(i));
      std::memcpy(&out[static_cast<size_t>(i)], &bits, end - i >= 2 ? 8 : 4);
    }
  });
  return out;
}

Int4Weights random_int4_weights(const std::vector<int32_t>& nibbles, int64_t n, int64_t k,
                                int64_t group, uint64_t seed) {
  Int4Weights w;
  w.n = n;
  w.k = k;
  w.group = group;
  w.nibbles = nibbles.data();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> scale(0.005f, 0.02f);
  w.scales.resize(static_cast<size_t>(n * w.groups()));
  for (float& s : w.scales) s = scale(rng);
  return w;
}

std::vector<float> random_normal(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> out(count);
  for (float& v : out) v = normal(rng);
  return out;
}

}  // namespace dq4::cli::bench
