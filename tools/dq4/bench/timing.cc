#include "bench/timing.h"

#include <chrono>
#include <vector>

namespace dq4::cli::bench {

Summary time_calls(const std::function<void()>& call, const TimingPlan& plan) {
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  const auto warmup_start = Clock::now();
  do {
    call();
  } while (seconds(Clock::now() - warmup_start) < plan.warmup_s);

  std::vector<double> samples;
  double total = 0;
  while (static_cast<int>(samples.size()) < plan.max_calls &&
         (static_cast<int>(samples.size()) < plan.min_calls || total < plan.min_time_s)) {
    const auto start = Clock::now();
    call();
    const double s = seconds(Clock::now() - start);
    samples.push_back(s);
    total += s;
  }
  return summarize(std::move(samples));
}

}  // namespace dq4::cli::bench
