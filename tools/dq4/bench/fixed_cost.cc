#include "bench/fixed_cost.h"

#include <algorithm>
#include <vector>

#include "bench/test_weights.h"
#include "bench/timing.h"
#include "dq4/thread_pool.h"

namespace dq4::cli::bench {
namespace {

constexpr int64_t kWideN = 128;
constexpr int kRounds = 7;

}  // namespace

FixedCost fixed_call_cost(const w4a8::Kernel& kernel, int64_t k, int64_t group, const float* x,
                          int64_t m, int threads) {
  const std::vector<int32_t> nibbles = random_nibbles(kWideN, k, 7);
  const Int4Weights wide = random_int4_weights(nibbles, kWideN, k, group, 8);
  Int4Weights narrow = wide;
  narrow.n = 1;
  const w4a8::PackedWeights packed[2] = {w4a8::pack(narrow.source(), kernel),
                                         w4a8::pack(wide.source(), kernel)};
  std::vector<float> y(static_cast<size_t>(m * kWideN));

  // Alternate the two sizes round by round; take the median of the round medians.
  std::vector<double> medians[2];
  TimingPlan plan;
  plan.min_time_s = 0.01;
  plan.min_calls = 50;
  plan.warmup_s = 0.002;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < 2; ++i) {
      w4a8::MatmulArgs args;
      args.m = m;
      args.x = x;
      args.ldx = k;
      args.y = y.data();
      args.ldy = packed[i].n();
      args.pool = &ThreadPool::global();
      args.max_threads = threads;
      medians[i].push_back(time_calls([&] { w4a8::matmul(packed[i], args); }, plan).median);
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

}  // namespace dq4::cli::bench
