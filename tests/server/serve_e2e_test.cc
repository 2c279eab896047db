// A live `dq4 serve` on the stories260K fixture: the official OpenAI client (node), concurrent
// streams against the same requests run alone, speculation, clients that disconnect, hostile
// requests, /metrics through promtool, a soak, `dq4 bench serve`.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../cli_runner.h"
#include "../fixtures.h"
#include "dq4/kernels/error.h"
#include "dq4/server/listener.h"
#include "eventually.h"
#include "http_client.h"
#include "promtool.h"
#include "serve_process.h"
#include "step_gate.h"
#include "stories_server.h"

namespace dq4::test {
namespace {

using nlohmann::json;
using server::HttpClient;
using server::HttpReply;

class ServeEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServeProcess(serve_args()); }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->terminate(), 0) << server_->log();
    delete server_;
  }
  static int port() { return server_->port(); }
  static ServeProcess* server_;
};
ServeProcess* ServeEndToEnd::server_ = nullptr;

TEST_F(ServeEndToEnd, OfficialOpenAIClient) {
  const std::string js = DQ4_SOURCE_DIR "/tests/js";
  ASSERT_TRUE(std::filesystem::exists(js + "/node_modules/openai/package.json"))
      << "tests/js/node_modules/openai is missing: run scripts/install-deps.sh";
  const CliResult r =
      run_node(js + "/openai_server_test.mjs " + server_->url() + " stories " + kKey);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("checks passed"), std::string::npos) << r.out;
}

TEST_F(ServeEndToEnd, ConcurrentStreamsEqualTheSameRequestsAlone) {
  std::vector<json> requests;
  for (int i = 0; i < 32; ++i)
    requests.push_back(greedy(kPrompts[i % kPrompts.size()] + std::string(i / 8, '!'), 8 + 3 * i));
  std::vector<std::string> alone;
  for (const json& r : requests) alone.push_back(complete(port(), r));
  std::vector<Streamed> together(requests.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < requests.size(); ++i)
    threads.emplace_back([&, i] { together[i] = stream(port(), requests[i]); });
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(together[i].status, 200);
    EXPECT_TRUE(together[i].done) << i;
    EXPECT_EQ(together[i].text, alone[i]) << "request " << i;
  }
}

// `dq4 generate` runs the engine the server runs: the same request gives the same text, finish
// and stop reason, and the same tokens (their logprobs), whatever it asks for.
TEST_F(ServeEndToEnd, GenerateAndTheServerAgree) {
  struct Case {
    std::string options;
    json fields;
  };
  const std::vector<Case> cases = {
      {"--temp 0", {{"temperature", 0}}},
      {"--temp 0.9 --top-k 20 --top-p 0.9 --min-p 0.05 --seed 7",
       {{"temperature", 0.9}, {"top_k", 20}, {"top_p", 0.9}, {"min_p", 0.05}, {"seed", 7}}},
      {"--temp 0.8 --top-k 0 --top-p 1 --min-p 0 --seed 3 --repeat-penalty 1.3 "
       "--presence-penalty 0.5 --frequency-penalty 0.7",
       {{"temperature", 0.8},
        {"seed", 3},
        {"repetition_penalty", 1.3},
        {"presence_penalty", 0.5},
        {"frequency_penalty", 0.7}}},
      {"--temp 0 --stop Lily --stop 'was a' --include-stop-str-in-output",
       {{"temperature", 0}, {"stop", {"Lily", "was a"}}, {"include_stop_str_in_output", true}}},
      {"--temp 0 --stop-token-ids 432 --min-tokens 6",
       {{"temperature", 0}, {"stop_token_ids", {432}}, {"min_tokens", 6}}},
      {"--temp 0 --ignore-eos --no-skip-special-tokens",
       {{"temperature", 0}, {"ignore_eos", true}, {"skip_special_tokens", false}}}};
  for (const std::string& prompt : {kPrompts[0], kPrompts[2]})
    for (const Case& c : cases) {
      SCOPED_TRACE(prompt + ": " + c.options);
      const CliResult cli = run_dq4("generate -m " + shell_quote(model_dir()) + " -p '" + prompt +
                                    "' -n 48 --threads 1 --json --logprobs 0 " + c.options);
      ASSERT_EQ(cli.exit_code, 0) << cli.err;
      const json mine = json::parse(cli.out);
      json body = c.fields;
      body.update({{"model", "stories"}, {"prompt", prompt}, {"max_tokens", 48}, {"logprobs", 0}});
      const HttpReply reply = post(port(), "/v1/completions", body.dump());
      ASSERT_EQ(reply.status, 200) << reply.body;
      const json served = json::parse(reply.body)["choices"][0];
      EXPECT_EQ(mine["text"], served["text"]);
      EXPECT_EQ(mine["finish_reason"], served["finish_reason"]);
      EXPECT_EQ(mine["stop_reason"], served["stop_reason"]);
      const json& logprobs = served["logprobs"]["token_logprobs"];
      ASSERT_EQ(mine["logprobs"].size(), logprobs.size());
      for (size_t i = 0; i < logprobs.size(); ++i)
        EXPECT_EQ(mine["logprobs"][i]["logprob"], logprobs[i]) << "token " << i;
    }
}

TEST_F(ServeEndToEnd, SpeculationGivesTheSameTextAndLogprobsAndCountsDrafts) {
  ServeProcess speculative(serve_args({"--speculative-config",
                                       R"({"method": "ngram", "num_speculative_tokens": 4,
                                           "prompt_lookup_max": 3, "prompt_lookup_min": 1})"}));
  for (const std::string& prompt : {kPrompts[0], kPrompts[4]})
    for (const json& sampling :
         {json{{"temperature", 0}}, json{{"temperature", 0.8}, {"seed", 5}, {"top_p", 0.9}}}) {
      json body = sampling;
      body.update({{"model", "stories"},
                   {"prompt", prompt},
                   {"max_tokens", 64},
                   {"logprobs", 2},
                   {"ignore_eos", true}});
      const HttpReply want = post(port(), "/v1/completions", body.dump());
      const HttpReply got = post(speculative.port(), "/v1/completions", body.dump());
      ASSERT_EQ(want.status, 200) << want.body;
      ASSERT_EQ(got.status, 200) << got.body;
      const json w = json::parse(want.body)["choices"][0], g = json::parse(got.body)["choices"][0];
      EXPECT_EQ(g["text"], w["text"]) << prompt << " " << sampling;
      EXPECT_EQ(g["logprobs"], w["logprobs"]) << prompt << " " << sampling;
    }
  const double drafts = metric(speculative.port(), "vllm:spec_decode_num_draft_tokens_total{");
  const double accepted = metric(speculative.port(), "vllm:spec_decode_num_accepted_tokens_total{");
  EXPECT_GT(drafts, 0);
  EXPECT_GT(accepted, 0);
  EXPECT_LE(accepted, drafts);
  EXPECT_GT(metric(speculative.port(), "vllm:spec_decode_num_drafts_total{"), 0);
  EXPECT_GT(metric(speculative.port(),
                   "vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"stories\","
                   "position=\"0\"}"),
            0);
  EXPECT_EQ(metric(port(), "vllm:spec_decode_num_draft_tokens_total{"), -1);
  test::expect_only_vllm_name_findings(
      test::promtool_check_metrics(get(speculative.port(), "/metrics", "").body));
  EXPECT_EQ(speculative.terminate(), 0) << speculative.log();
}

TEST_F(ServeEndToEnd, ADraftModelGivesTheSameTextAndLogprobsAndCountsDrafts) {
  // stories260K in W4A8 drafted by its F32 checkpoint: most drafts stand, not all. (--draft-model
  // DIR is --speculative-config '{"model": DIR, ...}' with 4 drafts; the JSON's own path is the
  // refusal test's below.)
  ServeProcess plain(serve_args({"--quantize", "w4a8-g32"}));
  ServeProcess speculative(serve_args({"--quantize", "w4a8-g32", "--draft-model", model_dir()}));
  for (const json& sampling :
       {json{{"temperature", 0}}, json{{"temperature", 0.9}, {"seed", 9}, {"n", 2}}}) {
    json body = sampling;
    body.update({{"model", "stories"},
                 {"prompt", kPrompts[1]},
                 {"max_tokens", 48},
                 {"logprobs", 2},
                 {"ignore_eos", true}});
    const HttpReply want = post(plain.port(), "/v1/completions", body.dump());
    const HttpReply got = post(speculative.port(), "/v1/completions", body.dump());
    ASSERT_EQ(want.status, 200) << want.body;
    ASSERT_EQ(got.status, 200) << got.body;
    EXPECT_EQ(json::parse(got.body)["choices"], json::parse(want.body)["choices"]) << sampling;
  }
  const double drafts = metric(speculative.port(), "vllm:spec_decode_num_draft_tokens_total{");
  const double accepted = metric(speculative.port(), "vllm:spec_decode_num_accepted_tokens_total{");
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafts);
  EXPECT_EQ(speculative.terminate(), 0) << speculative.log();
  EXPECT_EQ(plain.terminate(), 0) << plain.log();
}

TEST(ServeLimits, ADraftModelWithAnotherTokenizerIsRefused) {
  const CliResult r = run_dq4("serve " + shell_quote(model_dir()) + " --speculative-config " +
                              shell_quote(R"({"model": ")" + fixtures_dir() +
                                          R"(/tokenizer-llama2", "num_speculative_tokens": 2})"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("tokenizer is not the target's"), std::string::npos) << r.err;
  const CliResult both =
      run_dq4("serve " + shell_quote(model_dir()) + " --draft-model " + shell_quote(model_dir()) +
              " --speculative-config " + shell_quote(R"({"method": "ngram"})"));
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.err.find("--speculative-config and --draft-model"), std::string::npos) << both.err;
}

TEST_F(ServeEndToEnd, RejectionSamplingKeepsGreedyTextAndCountsDrafts) {
  ServeProcess speculative(serve_args({"--speculative-config",
                                       R"({"method": "ngram", "num_speculative_tokens": 4,
                                           "prompt_lookup_max": 3, "prompt_lookup_min": 1,
                                           "acceptance_method": "rejection_sampler"})"}));
  json body = {{"model", "stories"},
               {"prompt", kPrompts[0]},
               {"max_tokens", 64},
               {"temperature", 0},
               {"ignore_eos", true}};
  const HttpReply want = post(port(), "/v1/completions", body.dump());
  const HttpReply got = post(speculative.port(), "/v1/completions", body.dump());
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(json::parse(got.body)["choices"][0]["text"],
            json::parse(want.body)["choices"][0]["text"]);
  body.update({{"temperature", 0.8}, {"seed", 5}, {"prompt", kPrompts[4]}});
  const HttpReply sampled = post(speculative.port(), "/v1/completions", body.dump());
  ASSERT_EQ(sampled.status, 200) << sampled.body;
  EXPECT_EQ(json::parse(sampled.body)["usage"]["completion_tokens"], 64);
  const double drafts = metric(speculative.port(), "vllm:spec_decode_num_draft_tokens_total{");
  const double accepted = metric(speculative.port(), "vllm:spec_decode_num_accepted_tokens_total{");
  EXPECT_GT(drafts, 0);
  EXPECT_GT(accepted, 0);
  EXPECT_LE(accepted, drafts);
  EXPECT_EQ(speculative.terminate(), 0) << speculative.log();
}

TEST(ServeLimits, ABadSpeculativeConfigNamesTheField) {
  const CliResult r = run_dq4("serve " + shell_quote(model_dir()) +
                              " --speculative-config '{\"method\": \"ngram\", "
                              "\"num_speculative_tokens\": 4, \"prompt_lookup_min\": 0}'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("prompt_lookup_min"), std::string::npos) << r.err;
}

TEST_F(ServeEndToEnd, DisconnectedClientsGiveTheirBlocksBack) {
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      json body = greedy(kPrompts[size_t(i)], 400);
      body["ignore_eos"] = true;
      const Streamed s = stream(port(), body, 2);
      EXPECT_EQ(s.events, 2);
    });
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(eventually([&] {
    return metric(port(), "vllm:num_requests_running") == 0 &&
           metric(port(), "dq4_kv_cache_blocks_used") == 0;
  })) << get(port(), "/metrics", "").body;
  EXPECT_GE(metric(port(),
                   "vllm:request_success_total{model_name=\"stories\",finished_reason=\"abort\"}"),
            8);
  EXPECT_EQ(complete(port(), greedy("Once upon a time", 5)).empty(), false);
}

TEST_F(ServeEndToEnd, HostileAndMalformedRequestsGetOpenAIErrors) {
  struct Case {
    std::string method, path, body, headers;
    int status;
    std::string fragment;
  };
  const std::string deep = "{\"prompt\": " + std::string(10000, '[');
  const std::vector<Case> cases = {
      {"POST", "/v1/completions", "{not json", kAuth, 400, "not valid JSON"},
      {"POST", "/v1/completions", R"({"model": "stories", "prompt": "x", "max_tokens": "5"})",
       kAuth, 400, "max_tokens"},
      {"POST", "/v1/completions", R"({"prompt": "x", "frobnicate": true})", kAuth, 400,
       "Unrecognized"},
      {"POST", "/v1/completions", R"({"model": "gpt-4", "prompt": "x"})", kAuth, 404,
       "model_not_found"},
      {"POST", "/v1/completions", R"({"prompt": "x", "max_tokens": 600})", kAuth, 400,
       "maximum context length"},
      {"POST", "/v1/completions", R"({"prompt": [1, 2, 999999]})", kAuth, 400, "error"},
      {"POST", "/v1/completions", R"({"prompt": "x", "n": 1000})", kAuth, 400, "\"param\":\"n\""},
      {"POST", "/v1/completions", "{\"prompt\": \"\xc3\x28\"}", kAuth, 400, "not valid JSON"},
      {"POST", "/v1/completions", deep, kAuth, 400, "nested too deeply"},
      {"POST", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", kAuth, 400,
       "not supported"},
      {"POST", "/v1/completions", R"({"prompt": "x"})", "", 401, "invalid_api_key"},
      {"POST", "/v1/completions", R"({"prompt": "x"})", "Authorization: Bearer test-kez\r\n", 401,
       "invalid_api_key"},
      {"GET", "/v1/completions", "", kAuth, 405, "not allowed"},
      {"GET", "/v2/everything", "", kAuth, 404, "no route"},
      {"POST", "/v1/completions", std::string(9 << 20, ' '), kAuth, 413, "request_too_large"},
      {"POST", "/detokenize", R"({"tokens": [1, -1]})", kAuth, 400, "tokens"},
  };
  for (const Case& c : cases) {
    HttpClient client("127.0.0.1", port());
    HttpReply r;
    try {
      client.send(c.method, c.path, c.body, c.headers);
      r = client.read_reply();
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.path << " " << c.body.substr(0, 60) << ": " << e.what();
      continue;
    }
    EXPECT_EQ(r.status, c.status) << c.body.substr(0, 80) << " -> " << r.body;
    EXPECT_NE(r.body.find(c.fragment), std::string::npos) << r.body;
    const json error = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(error.is_object() && error.contains("error")) << r.body;
    for (const char* field : {"message", "type", "param", "code"})
      EXPECT_TRUE(error["error"].contains(field)) << r.body;
  }
  EXPECT_EQ(get(port(), "/health", "").status, 200);  // open without the key
  EXPECT_EQ(get(port(), "/metrics", "").status, 200);
  EXPECT_FALSE(complete(port(), greedy("The sun was", 6)).empty());
}

TEST_F(ServeEndToEnd, DetokenizeInvertsTokenize) {
  const std::string text = "Lily and Ben went to the park. They saw a big dog!";
  const HttpReply t =
      post(port(), "/tokenize",
           json{{"model", "stories"}, {"prompt", text}, {"add_special_tokens", false}}.dump());
  ASSERT_EQ(t.status, 200) << t.body;
  const json tokens = json::parse(t.body)["tokens"];
  ASSERT_GT(tokens.size(), 5u) << t.body;
  const HttpReply d =
      post(port(), "/detokenize", json{{"model", "stories"}, {"tokens", tokens}}.dump());
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(json::parse(d.body)["prompt"], text) << d.body;
}

TEST_F(ServeEndToEnd, LiveMetricsPassPromtool) {
  complete(port(), greedy("Mom said", 4));
  test::expect_only_vllm_name_findings(
      test::promtool_check_metrics(get(port(), "/metrics", "").body));
}

// 2,000 requests, streamed or not, a tenth of them abandoned mid-stream: every other one must
// come back whole and equal to the same request run alone.
TEST_F(ServeEndToEnd, SoakLosesDuplicatesAndTruncatesNothing) {
  const std::vector<int> lengths = {4, 12, 24};
  std::map<std::pair<size_t, int>, std::string> reference;
  for (size_t p = 0; p < kPrompts.size(); ++p)
    for (int n : lengths) reference[{p, n}] = complete(port(), greedy(kPrompts[p], n));
  constexpr int kRequests = 2000, kWorkers = 16;
  std::atomic<int> next{0}, whole{0}, abandoned{0}, wrong{0}, failed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w)
    workers.emplace_back([&, w] {
      std::mt19937 rng(w);
      for (int i; (i = next++) < kRequests;) {
        const size_t p = rng() % kPrompts.size();
        const int n = lengths[rng() % lengths.size()];
        const int kind = int(rng() % 10);  // 0: abandon, 1-5: stream, 6-9: whole
        const json body = greedy(kPrompts[p], n);
        try {
          if (kind == 0) {
            stream(port(), body, 1);
            abandoned++;
          } else if (kind <= 5) {
            const Streamed s = stream(port(), body);
            (s.status == 200 && s.done && !s.finish_reason.empty() && s.text == reference[{p, n}]
                 ? whole
                 : wrong)++;
          } else {
            const HttpReply r = post(port(), "/v1/completions", body.dump());
            const json j = json::parse(r.body);
            (r.status == 200 && j["choices"][0]["text"] == reference[{p, n}] ? whole : wrong)++;
          }
        } catch (const std::exception& e) {
          failed++;
        }
      }
    });
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(whole + abandoned, kRequests);
  EXPECT_GT(abandoned, 100);
  EXPECT_TRUE(eventually([&] {
    return metric(port(), "vllm:num_requests_running") == 0 &&
           metric(port(), "dq4_kv_cache_blocks_used") == 0;
  }));
}

// `dq4 bench serve` against the live server: every request completes with the asked-for tokens,
// no run of the sweep reuses another's prompts (the prefix cache would flatter it), and
// latencies count from sending. At concurrency 1 the requests run one after another within the
// run, so their end-to-end latencies counted from sending add up to at most the run's duration;
// counted from the run's start (each including its wait for its turn), the last two alone
// would add up to more.
TEST_F(ServeEndToEnd, BenchServeMeasuresEveryRequestFromSending) {
  const double hits_before = metric(port(), "vllm:prefix_cache_hits_total");
  const CliResult r = run_dq4("bench serve --url http://127.0.0.1:" + std::to_string(port()) +
                              " --api-key " + kKey +
                              " --concurrency 1,4 --num-prompts 16 --input-len 40 --output-len 8"
                              " --max-token-id 500 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json levels = json::parse(r.out);
  ASSERT_EQ(levels.size(), 2u) << r.out;
  for (const json& level : levels) {
    EXPECT_EQ(level["completed"], 16) << level.dump();
    EXPECT_EQ(level["failed"], 0) << level.dump();
    EXPECT_EQ(level["output_tokens"], 16 * 8) << level.dump();
    EXPECT_EQ(level["input_tokens"], 16 * 40) << level.dump();
    EXPECT_GT(level["ttft"]["p50_ms"].get<double>(), 0) << level.dump();
    EXPECT_LE(level["ttft"]["p99_ms"].get<double>(), level["e2e"]["p99_ms"].get<double>())
        << level.dump();
  }
  EXPECT_EQ(metric(port(), "vllm:prefix_cache_hits_total"), hits_before);
  const json& one = levels[0];
  ASSERT_EQ(one["concurrency"], 1);
  const double e2e_sum_s =
      one["e2e"]["mean_ms"].get<double>() * 1e-3 * one["completed"].get<double>();
  EXPECT_LE(e2e_sum_s, one["duration_s"].get<double>() * (1 + 1e-9)) << one.dump();
}

// Poisson arrivals of prompts from a file: 8 arrivals at 10 requests/s take about 0.8 s (the
// seed fixes them: well over 0.3 s), each request served on arrival in a few milliseconds; the
// prompts cycle through the file's lines, so the input tokens are theirs.
TEST_F(ServeEndToEnd, BenchServeSendsFilePromptsAtARequestRate) {
  const std::vector<std::string> lines = {"Once upon a time", "The little dog", "Mom said"};
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("dq4_bench_prompts_" + std::to_string(getpid()) + ".txt"))
                               .string();
  {
    std::ofstream out(file);
    for (const std::string& line : lines) out << line << "\n";
  }
  int64_t file_tokens = 0;
  for (const std::string& line : lines) {
    const HttpReply t = post(port(), "/tokenize", json{{"prompt", line}}.dump());
    ASSERT_EQ(t.status, 200) << t.body;
    file_tokens += json::parse(t.body)["count"].get<int64_t>();
  }
  const CliResult r = run_dq4("bench serve --url http://127.0.0.1:" + std::to_string(port()) +
                              " --api-key " + kKey + " --prompts " + file +
                              " --request-rate 10 --num-prompts 6 --output-len 4 --json");
  std::filesystem::remove(file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json levels = json::parse(r.out);
  ASSERT_EQ(levels.size(), 1u) << r.out;
  const json& level = levels[0];
  EXPECT_EQ(level["request_rate"], 10.0) << level.dump();
  EXPECT_EQ(level["completed"], 6) << level.dump();
  EXPECT_EQ(level["failed"], 0) << level.dump();
  EXPECT_EQ(level["output_tokens"], 6 * 4) << level.dump();
  EXPECT_EQ(level["input_tokens"], 2 * file_tokens) << level.dump();
  EXPECT_GT(level["duration_s"].get<double>(), 0.3) << level.dump();
}

}  // namespace
}  // namespace dq4::test
