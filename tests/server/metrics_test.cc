// /metrics text: vLLM's names, histogram buckets as Prometheus wants them, and promtool's check.

#include "metrics.h"

#include <gtest/gtest.h>

#include <string>

#include "promtool.h"

namespace dq4::server {
namespace {

EngineStats sample_stats() {
  EngineStats s;
  s.running = 3;
  s.waiting = 2;
  s.kv_blocks_total = 100;
  s.kv_blocks_used = 25;
  s.kv_usage = 0.25;
  s.prefix_cache_queries = 640;
  s.prefix_cache_hits = 320;
  s.prompt_tokens = 1000;
  s.generation_tokens = 500;
  s.requests_finished_stop = 7;
  s.requests_finished_length = 1;
  s.time_to_first_token = Histogram{{0.1, 1.0}, {4, 9}, 10, 3.5};
  s.e2e_request_latency = Histogram{{1.0}, {2}, 2, 1.5};
  return s;
}

TEST(Metrics, VllmNamesAndValues) {
  const std::string text = render_metrics(sample_stats(), HttpCounters{5, 2}, "tiny \"model\"");
  for (const char* line :
       {"vllm:num_requests_running{model_name=\"tiny \\\"model\\\"\"} 3\n",
        "vllm:num_requests_waiting{model_name=\"tiny \\\"model\\\"\"} 2\n",
        "vllm:kv_cache_usage_perc{model_name=\"tiny \\\"model\\\"\"} 0.25\n",
        "vllm:prefix_cache_queries_total{model_name=\"tiny \\\"model\\\"\"} 640\n",
        "vllm:prefix_cache_hits_total{model_name=\"tiny \\\"model\\\"\"} 320\n",
        "vllm:prompt_tokens_total{model_name=\"tiny \\\"model\\\"\"} 1000\n",
        "vllm:generation_tokens_total{model_name=\"tiny \\\"model\\\"\"} 500\n",
        "vllm:request_success_total{model_name=\"tiny \\\"model\\\"\",finished_reason=\"stop\"} "
        "7\n",
        "vllm:time_to_first_token_seconds_bucket{model_name=\"tiny "
        "\\\"model\\\"\",le=\"0.10000000000000001\"} 4\n",
        "vllm:time_to_first_token_seconds_bucket{model_name=\"tiny \\\"model\\\"\",le=\"+Inf\"} "
        "10\n",
        "vllm:time_to_first_token_seconds_count{model_name=\"tiny \\\"model\\\"\"} 10\n",
        "vllm:time_to_first_token_seconds_sum{model_name=\"tiny \\\"model\\\"\"} 3.5\n",
        "# TYPE vllm:time_per_output_token_seconds histogram\n",
        "# TYPE vllm:inter_token_latency_seconds histogram\n",
        "# TYPE vllm:e2e_request_latency_seconds histogram\n",
        "dq4_http_open_connections{model_name=\"tiny \\\"model\\\"\"} 5\n"})
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << text;
}

// promtool parses and lints the text: the one finding allowed is the colon of vLLM's names.
TEST(Metrics, PassesPromtoolCheck) {
  const test::PromtoolCheck check =
      test::promtool_check_metrics(render_metrics(sample_stats(), HttpCounters{1, 0}, "m"));
  EXPECT_GT(test::expect_only_vllm_name_findings(check), 0);  // the lint ran on vLLM's names
}

}  // namespace
}  // namespace dq4::server
