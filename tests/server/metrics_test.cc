// /metrics text: vLLM's names, histogram buckets as Prometheus wants them, and promtool's check.

#include "metrics.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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

// Debian's prometheus package ships promtool; install-deps.sh installs it. promtool parses the
// text (exit 1 on any format error) and then lints it (exit 3): the one finding allowed is the
// colon of vLLM's names, which vLLM's own /metrics has too.
TEST(Metrics, PassesPromtoolCheck) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("dq4_metrics_" + std::to_string(getpid()) + ".txt"))
                               .string();
  {
    std::ofstream out(path);
    out << render_metrics(sample_stats(), HttpCounters{1, 0}, "m");
  }
  const std::string command = "promtool check metrics < " + path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  std::filesystem::remove(path);
  ASSERT_NE(WEXITSTATUS(status), 127) << "promtool not found: run scripts/install-deps.sh";
  EXPECT_TRUE(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3) << output;
  std::istringstream lines(output);
  int findings = 0;
  for (std::string line; std::getline(lines, line); ++findings)
    EXPECT_TRUE(line.rfind("vllm:", 0) == 0 &&
                line.find(" metric names should not contain ':'") != std::string::npos)
        << line;
  EXPECT_GT(findings, 0);  // the check ran on vLLM's names
}

}  // namespace
}  // namespace dq4::server
