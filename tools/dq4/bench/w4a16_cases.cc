#include "bench/w4a16_cases.h"

#include <algorithm>

#include "bench/cold_copies.h"
#include "bench/probes.h"
#include "dq4/kernels/thread_pool.h"

namespace dq4::cli::bench {

std::vector<CaseResult> run_w4a16_cases(const W4A16Bench& bench, const Shape& s,
                                        const Int4Weights& weights, const float* x, float* y,
                                        std::map<std::pair<int64_t, int64_t>, FixedCost>& fixed) {
  const w4a16::PackedWeights packed = w4a16::pack(weights.source(), *bench.kernel);
  const FixedCost* fixed_cost = nullptr;
  if (std::find(bench.ms.begin(), bench.ms.end(), 1) != bench.ms.end()) {
    const auto key = std::make_pair(s.k, weights.group);
    if (fixed.count(key) == 0)
      fixed[key] = fixed_call_cost(*bench.kernel, s.k, weights.group, x, 1, 1);
    fixed_cost = &fixed[key];
  }
  ColdCopies<w4a16::PackedWeights> cold(packed, packed.bytes(), bench.cold_budget);
  // Write back the dirty lines the copying left in the caches before the first case is timed.
  for (size_t i = 0; i < cold.count(); ++i) read_through(cold[i].data(), cold[i].bytes());

  std::vector<CaseResult> block;
  for (int64_t m : bench.ms) {
    for (int threads : bench.threads) {
      if (bench.starting) bench.starting("w4a16", m, threads);
      MatmulArgs args;
      args.m = m;
      args.x = x;
      args.ldx = s.k;
      args.y = y;
      args.ldy = s.n;
      args.pool = &ThreadPool::global();
      args.max_threads = threads;
      CaseResult r;
      r.kind = "w4a16";
      r.isa = std::string(w4a16::family().name(*bench.kernel));
      r.variant = std::string(w4a16::family().variant(*bench.kernel));
      r.n = s.n;
      r.k = s.k;
      r.m = m;
      r.group = weights.group;
      r.threads = threads;
      r.seconds = time_calls([&] { w4a16::matmul(cold.next(), args); }, bench.plan);
      r.weight_bytes = static_cast<int64_t>(packed.bytes());
      r.cold_copies = static_cast<int64_t>(cold.count());
      const double t = r.seconds.median;
      r.gflops = 2.0 * static_cast<double>(m) * static_cast<double>(s.n) *
                 static_cast<double>(s.k) / t * 1e-9;
      r.weight_gbps = static_cast<double>(r.weight_bytes) / t * 1e-9;
      if (m == 1 && fixed_cost != nullptr) {
        r.fixed_seconds = fixed_cost->seconds;
        r.quant_share = fixed_cost->seconds / t;
      }
      block.push_back(r);
    }
  }
  return block;
}

}  // namespace dq4::cli::bench
