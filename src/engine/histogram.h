#pragma once
// Filling the Prometheus-style histograms of EngineStats.

#include <vector>

#include "dq4/engine/engine.h"

namespace dq4::engine {

Histogram make_histogram(std::vector<double> upper_bounds);
void observe(Histogram& histogram, double value);

// vLLM's buckets for the same metrics, so that dashboards made for it read dq4 alike.
std::vector<double> ttft_buckets();
std::vector<double> tpot_buckets();
std::vector<double> e2e_buckets();

}  // namespace dq4::engine
