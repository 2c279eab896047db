#include "bench/stats.h"

#include <algorithm>
#include <cstddef>

namespace dq4::cli::bench {

Summary summarize(std::vector<double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  const auto rank = [&](double q) {
    return samples[std::min(n - 1, static_cast<size_t>(q * static_cast<double>(n - 1) + 0.5))];
  };
  s.median = n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.p10 = rank(0.1);
  s.p90 = rank(0.9);
  s.min = samples.front();
  s.max = samples.back();
  s.samples = static_cast<int>(n);
  return s;
}

}  // namespace dq4::cli::bench
