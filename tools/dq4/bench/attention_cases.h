#pragma once
// The attention rows of `dq4 bench kernels` (kind attention): Llama-3.2-1B's attention (32
// heads of 64 over 8 kv heads) and a multi-head one (OLMoE's: 16 heads of 128, 16 kv heads) over
// a paged KV cache in blocks of 16 tokens, F32 and BF16: decode (1 new token) at contexts 512,
// 2048 and 4096, and a 512-token prefill. Each case cycles through cold copies of its cache. In a
// CaseResult, N is heads x head_dim, K the context and M the new tokens; "weights" are the keys
// and values read; the variant names the cache type and heads x head_dim / kv heads.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "bench/report.h"
#include "bench/timing.h"
#include "dq4/kernels/attention.h"

namespace dq4::cli::bench {

struct AttentionBench {
  const attention::Kernel* kernel = nullptr;
  std::vector<int> threads;
  TimingPlan plan;
  size_t cold_budget = 0;
  // Called before each case (progress output).
  std::function<void(const std::string& what, int threads)> starting;
};

// The number of cases run_attention_cases() runs per thread count.
int64_t attention_case_count();

std::vector<CaseResult> run_attention_cases(const AttentionBench& bench);

}  // namespace dq4::cli::bench
