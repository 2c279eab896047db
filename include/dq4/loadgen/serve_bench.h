#pragma once
// `dq4 bench serve`'s load generator: streamed requests against any OpenAI-compatible server
// (dq4 serve, vLLM, ...) at a fixed concurrency or a Poisson request rate, timed per token as
// vLLM's `bench serve` does: time to first token, time per output token, inter-token latency,
// end-to-end latency, output tokens/s and requests/s.

#include <cstdint>
#include <string>
#include <vector>

namespace dq4 {

struct ServeBenchOptions {
  std::string url = "http://127.0.0.1:8000";  // base URL; requests go to URL/v1/...
  std::string model;                          // empty: the first of GET /v1/models
  std::string api_key;
  bool chat = false;  // /v1/chat/completions instead of /v1/completions
  // Prompts: these texts (cycled), or when empty random token ids in [min_token_id,
  // max_token_id) of input_len tokens each (completions only).
  std::vector<std::string> prompts;
  int64_t input_len = 256;
  int64_t min_token_id = 10, max_token_id = 256;
  int64_t output_len = 128;  // max_tokens
  bool ignore_eos = true;    // vLLM's extension: every request generates output_len tokens
  int64_t num_prompts = 64;
  int concurrency = 1;      // requests in flight at most
  double request_rate = 0;  // > 0: Poisson arrivals at this many requests/s
  uint64_t seed = 0;
  double timeout_seconds = 600;
};

struct LatencySummary {
  double mean = 0, p50 = 0, p99 = 0;  // seconds
};

struct ServeBenchResult {
  int concurrency = 0;
  double request_rate = 0;
  int64_t completed = 0, failed = 0;
  std::string first_error;
  double duration_seconds = 0;
  int64_t input_tokens = 0, output_tokens = 0;
  double output_tokens_per_second = 0, requests_per_second = 0;
  LatencySummary ttft, tpot, itl, e2e;
};

// Runs one measurement (after one warm-up request). Throws dq4::Error when the server cannot be
// reached or the options are unusable; failed requests are counted, not thrown.
ServeBenchResult run_serve_bench(const ServeBenchOptions& options);

}  // namespace dq4
