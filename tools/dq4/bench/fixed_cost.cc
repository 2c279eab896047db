#include "bench/fixed_cost.h"

#include <algorithm>
#include <array>
#include <vector>

#include "bench/test_weights.h"
#include "bench/timing.h"
#include "dq4/kernels/thread_pool.h"

namespace dq4::cli::bench {
namespace {

constexpr int64_t kWideN = 128;
constexpr int kRounds = 7;

// `pack(source)` gives the family's packed weights, `matmul(packed, args)` runs them.
template <class Pack, class Matmul>
FixedCost measure(Pack pack, Matmul matmul, int64_t k, int64_t group, const float* x, int64_t m,
                  int threads) {
  const std::vector<int32_t> nibbles = random_nibbles(kWideN, k, 7);
  const Int4Weights wide = random_int4_weights(nibbles, kWideN, k, group, 8);
  Int4Weights narrow = wide;
  narrow.n = 1;
  const std::array packed = {pack(narrow.source()), pack(wide.source())};
  std::vector<float> y(static_cast<size_t>(m * kWideN));

  // Alternate the two sizes round by round; take the median of the round medians.
  std::vector<double> medians[2];
  TimingPlan plan;
  plan.min_time_s = 0.01;
  plan.min_calls = 50;
  plan.warmup_s = 0.002;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < 2; ++i) {
      MatmulArgs args;
      args.m = m;
      args.x = x;
      args.ldx = k;
      args.y = y.data();
      args.ldy = packed[i].n();
      args.pool = &ThreadPool::global();
      args.max_threads = threads;
      medians[i].push_back(time_calls([&] { matmul(packed[i], args); }, plan).median);
    }
  }
  const double t1 = summarize(medians[0]).median, t2 = summarize(medians[1]).median;
  const double b1 = static_cast<double>(packed[0].bytes()),
               b2 = static_cast<double>(packed[1].bytes());
  FixedCost cost;
  cost.one_column_s = t1;
  cost.seconds = b2 > b1 ? std::clamp(t1 - (t2 - t1) * b1 / (b2 - b1), 0.0, t1) : t1;
  return cost;
}

}  // namespace

FixedCost fixed_call_cost(const w4a8::Kernel& kernel, int64_t k, int64_t group, const float* x,
                          int64_t m, int threads) {
  return measure([&](const int4::WeightSource& s) { return w4a8::pack(s, kernel); },
                 [](const w4a8::PackedWeights& w, const MatmulArgs& a) { w4a8::matmul(w, a); }, k,
                 group, x, m, threads);
}

FixedCost fixed_call_cost(const w4a16::Kernel& kernel, int64_t k, int64_t group, const float* x,
                          int64_t m, int threads) {
  return measure([&](const int4::WeightSource& s) { return w4a16::pack(s, kernel); },
                 [](const w4a16::PackedWeights& w, const MatmulArgs& a) { w4a16::matmul(w, a); }, k,
                 group, x, m, threads);
}

}  // namespace dq4::cli::bench
