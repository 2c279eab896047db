#include "bench/serve_bench_cli.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.h"
#include "dq4/kernels/error.h"
#include "dq4/loadgen/serve_bench.h"

namespace dq4::cli::bench {
namespace {

std::vector<std::string> read_prompts(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("option --prompts: cannot read " + path);
  std::vector<std::string> prompts;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) prompts.push_back(line);
  if (prompts.empty()) throw Error("option --prompts: " + path + " holds no prompt");
  return prompts;
}

nlohmann::json summary_json(const LatencySummary& s) {
  return {{"mean_ms", s.mean * 1e3}, {"p50_ms", s.p50 * 1e3}, {"p99_ms", s.p99 * 1e3}};
}

nlohmann::json result_json(const ServeBenchResult& r) {
  return {{"concurrency", r.concurrency},
          {"request_rate", r.request_rate},
          {"completed", r.completed},
          {"failed", r.failed},
          {"first_error", r.first_error},
          {"duration_s", r.duration_seconds},
          {"input_tokens", r.input_tokens},
          {"output_tokens", r.output_tokens},
          {"output_tokens_per_s", r.output_tokens_per_second},
          {"requests_per_s", r.requests_per_second},
          {"ttft", summary_json(r.ttft)},
          {"tpot", summary_json(r.tpot)},
          {"itl", summary_json(r.itl)},
          {"e2e", summary_json(r.e2e)}};
}

}  // namespace

int run_serve_bench_cli(int argc, char** argv, int first) {
  Args args("bench serve",
            "Streams requests to a running OpenAI-compatible server (dq4 serve, vLLM, ...) at\n"
            "each concurrency of a sweep, or at Poisson request rates, and prints time to first\n"
            "token (TTFT), time per output token (TPOT), inter-token latency (ITL) p50/p99,\n"
            "output tokens/s and requests/s per level. Greedy; ignore_eos so every request\n"
            "generates --output-len tokens.");
  args.option("url", "URL", "the server's base URL", "http://127.0.0.1:8000")
      .option("model", "NAME", "model name (default: the first of /v1/models)")
      .option("api-key", "KEY", "sent as 'Authorization: Bearer KEY'")
      .option("endpoint", "completions|chat", "which API to call", "completions")
      .option("concurrency", "LIST", "requests in flight at most, one run per value", "1,4,16,64")
      .option("request-rate", "LIST", "Poisson arrival rates (requests/s) instead of a sweep")
      .option("num-prompts", "N", "requests per run (0: max(16, 4 x concurrency))", "0")
      .option("input-len", "N", "tokens per random prompt", "256")
      .option("output-len", "N", "max_tokens of every request", "128")
      .option("prompts", "FILE", "prompts, one per line, instead of random token ids")
      .option("min-token-id", "N", "random prompts: smallest token id", "10")
      .option("max-token-id", "N", "random prompts: token ids below this", "256")
      .option("no-ignore-eos", "", "do not send vLLM's ignore_eos (e.g. for OpenAI itself)")
      .option("seed", "N",
              "random prompts and arrivals; run i of the sweep uses N + i, so that no run finds "
              "another's prompts in the server's prefix cache",
              "0")
      .option("json", "", "print the results as JSON");
  if (!args.parse(argc, argv, first)) return 0;

  ServeBenchOptions o;
  o.url = args.value("url");
  o.model = args.value("model");
  o.api_key = args.value("api-key");
  const std::string endpoint = args.value("endpoint");
  if (endpoint != "completions" && endpoint != "chat")
    throw Error("option --endpoint: expected completions or chat, got '" + endpoint + "'");
  o.chat = endpoint == "chat";
  if (!args.value("prompts").empty())
    o.prompts = read_prompts(args.value("prompts"));
  else if (o.chat)
    throw Error("--endpoint chat needs --prompts FILE (random prompts are token ids)");
  o.input_len = args.integer("input-len");
  o.output_len = args.integer("output-len");
  o.min_token_id = args.integer("min-token-id");
  o.max_token_id = args.integer("max-token-id");
  o.ignore_eos = !args.flag("no-ignore-eos");
  o.seed = static_cast<uint64_t>(args.integer("seed"));
  const int64_t num_prompts = args.integer("num-prompts");

  // One run per concurrency, or per rate (then up to 256 in flight).
  std::vector<std::pair<int, double>> runs;
  if (!args.value("request-rate").empty()) {
    for (const std::string& rate : split_commas(args.value("request-rate"))) {
      double r = 0;
      try {
        r = std::stod(rate);
      } catch (const std::exception&) {
      }
      if (!(r > 0))
        throw Error("option --request-rate: expected positive numbers, got '" + rate + "'");
      runs.emplace_back(256, r);
    }
  } else {
    for (int64_t c : args.integers("concurrency")) {
      if (c < 1 || c > 1024) throw Error("option --concurrency: values must be 1 to 1024");
      runs.emplace_back(int(c), 0.0);
    }
  }

  const bool as_json = args.flag("json");
  nlohmann::json all = nlohmann::json::array();
  const uint64_t seed = o.seed;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& [concurrency, rate] = runs[i];
    o.concurrency = concurrency;
    o.request_rate = rate;
    o.seed = seed + i;
    o.num_prompts = num_prompts > 0 ? num_prompts : std::max<int64_t>(16, 4 * int64_t(concurrency));
    const ServeBenchResult r = run_serve_bench(o);
    if (as_json) {
      all.push_back(result_json(r));
      continue;
    }
    if (&concurrency == &runs.front().first)
      std::printf("%-6s %-7s %5s %4s %9s %8s %9s %9s %9s %9s %9s %9s\n", "conc", "rate", "done",
                  "fail", "out tok/s", "req/s", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99",
                  "ITL p50", "ITL p99");
    std::printf(
        "%-6d %-7s %5lld %4lld %9.1f %8.2f %7.1fms %7.1fms %7.1fms %7.1fms %7.1fms %7.1fms\n",
        r.concurrency, rate > 0 ? std::to_string(rate).substr(0, 6).c_str() : "-",
        static_cast<long long>(r.completed), static_cast<long long>(r.failed),
        r.output_tokens_per_second, r.requests_per_second, r.ttft.p50 * 1e3, r.ttft.p99 * 1e3,
        r.tpot.p50 * 1e3, r.tpot.p99 * 1e3, r.itl.p50 * 1e3, r.itl.p99 * 1e3);
    if (!r.first_error.empty()) std::printf("       first error: %s\n", r.first_error.c_str());
    std::fflush(stdout);
  }
  if (as_json) std::printf("%s\n", all.dump(2).c_str());
  return 0;
}

}  // namespace dq4::cli::bench
