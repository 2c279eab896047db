#include "bench/dense_cases.h"

#include <algorithm>
#include <cstring>

#include "bench/cold_copies.h"
#include "bench/probes.h"
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

// The bf16 values (rounded to nearest even) of the f32 matrix.
std::vector<uint16_t> to_bf16(const float* w, size_t count) {
  std::vector<uint16_t> out(count);
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &w[i], 4);
    out[i] = static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  }
  return out;
}

}  // namespace

AlignedBuffer random_dense_weights(int64_t n, int64_t k, uint64_t seed) {
  AlignedBuffer out(static_cast<size_t>(n * k) * sizeof(float));
  float* w = reinterpret_cast<float*>(out.data());
  ThreadPool& pool = ThreadPool::global();
  const int64_t tasks = std::min<int64_t>(n, int64_t{4} * pool.size());
  pool.run(tasks, [&](int64_t t) {
    for (int64_t i = n * t / tasks * k; i < n * (t + 1) / tasks * k; ++i) {
      const uint64_t bits = mix(seed * 0x100000001b3ull + static_cast<uint64_t>(i));
      w[i] = static_cast<float>(static_cast<double>(bits >> 11) * 0x1p-53 - 0.5) * 0.1f;
    }
  });
  return out;
}

std::vector<CaseResult> run_dense_cases(const DenseBench& bench, const std::string& kind,
                                        const Shape& s, const AlignedBuffer& weights,
                                        const float* x, float* y) {
  const float* w = reinterpret_cast<const float*>(weights.data());
  const size_t count = static_cast<size_t>(s.n * s.k);
  std::vector<uint16_t> bf16;
  dense::WeightSource source;
  source.n = s.n;
  source.k = s.k;
  if (kind == "dense-bf16") {
    bf16 = to_bf16(w, count);
    source.data = bf16.data();
    source.type = dense::WeightType::bf16;
  } else {
    source.data = w;
    source.type = dense::WeightType::f32;
  }
  const dense::PackedWeights packed = dense::pack(source, *bench.kernel);
  bf16 = {};
  ColdCopies<dense::PackedWeights> cold(packed, packed.bytes(), bench.cold_budget);
  // Write back the dirty lines the copying left in the caches before the first case is timed.
  for (size_t i = 0; i < cold.count(); ++i) read_through(cold[i].data(), cold[i].bytes());

  std::vector<CaseResult> block;
  for (int64_t m : bench.ms) {
    for (int threads : bench.threads) {
      if (bench.starting) bench.starting(kind, m, threads);
      MatmulArgs args;
      args.m = m;
      args.x = x;
      args.ldx = s.k;
      args.y = y;
      args.ldy = s.n;
      args.pool = &ThreadPool::global();
      args.max_threads = threads;
      CaseResult r;
      r.kind = kind;
      r.isa = std::string(dense::family().name(*bench.kernel));
      r.variant = std::string(dense::family().variant(*bench.kernel));
      r.n = s.n;
      r.k = s.k;
      r.m = m;
      r.grouped = false;
      r.threads = threads;
      r.seconds = time_calls([&] { dense::matmul(cold.next(), args); }, bench.plan);
      r.weight_bytes = static_cast<int64_t>(packed.bytes());
      r.cold_copies = static_cast<int64_t>(cold.count());
      const double t = r.seconds.median;
      r.gflops = 2.0 * static_cast<double>(m) * static_cast<double>(s.n) *
                 static_cast<double>(s.k) / t * 1e-9;
      r.weight_gbps = static_cast<double>(r.weight_bytes) / t * 1e-9;
      block.push_back(r);
    }
  }
  return block;
}

}  // namespace dq4::cli::bench
