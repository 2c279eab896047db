#pragma once
// Summaries of repeated measurements (benchmarks report the median and the spread).

#include <vector>

namespace dq4::cli::bench {

struct Summary {
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0;
  int samples = 0;
};

// Median, nearest-rank 10th/90th percentiles, min and max of `samples` (all zero when empty).
Summary summarize(std::vector<double> samples);

}  // namespace dq4::cli::bench
