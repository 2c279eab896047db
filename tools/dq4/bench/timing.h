#pragma once
// Repeated timing of one operation: warm-up, then timed calls until both a minimum number of
// calls and a minimum time are reached; the caller reads the median and spread per call.

#include <functional>

#include "bench/stats.h"

namespace dq4::cli::bench {

struct TimingPlan {
  double min_time_s = 0.1;  // timed calls go on until this much time has passed...
  int min_calls = 3;        // ...and at least this many calls were timed
  int max_calls = 100000;
  double warmup_s = 0.01;  // untimed calls first, at least one
};

// Seconds per call of `call`.
Summary time_calls(const std::function<void()>& call, const TimingPlan& plan);

}  // namespace dq4::cli::bench
