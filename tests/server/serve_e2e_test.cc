// A live `dq4 serve` on the stories260K fixture: the official OpenAI client (node), concurrent
// streams against the same requests run alone, clients that disconnect, overload, hostile
// requests, /metrics through promtool, a soak, graceful shutdown.

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

namespace dq4::test {
namespace {

using nlohmann::json;
using server::HttpClient;
using server::HttpReply;

const std::string kKey = "test-key";
const std::string kAuth = "Authorization: Bearer " + kKey + "\r\n";

std::string model_dir() { return fixtures_dir() + "/stories260K-hf"; }

std::vector<std::string> serve_args(std::vector<std::string> extra = {},
                                    const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {model_dir(),
                                   "--served-model-name",
                                   "stories",
                                   "--chat-template",
                                   DQ4_SOURCE_DIR "/tests/server/chat_template.jinja",
                                   "--api-key",
                                   kKey,
                                   "--kv-cache-memory",
                                   "64MiB",
                                   "--threads",  // a loaded CI machine must not stall a pool
                                   "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

HttpReply post(int port, const std::string& path, const std::string& body,
               const std::string& headers = kAuth) {
  HttpClient client("127.0.0.1", port);
  client.send("POST", path, body, headers);
  return client.read_reply();
}

HttpReply get(int port, const std::string& path, const std::string& headers = kAuth) {
  HttpClient client("127.0.0.1", port);
  client.send("GET", path, "", headers);
  return client.read_reply();
}

struct Streamed {
  int status = 0;
  std::string text, finish_reason;
  bool done = false;  // data: [DONE] came
  int events = 0;
};

// Streams a completions request; stops reading after `read_events` events when given (the
// connection is then closed: a client going away).
Streamed stream(int port, json body, int read_events = -1) {
  body["stream"] = true;
  HttpClient client("127.0.0.1", port);
  client.send("POST", "/v1/completions", body.dump(), kAuth);
  Streamed s;
  s.status = client.read_head().status;
  std::string pending;
  while (auto piece = client.read_chunk()) {
    pending += *piece;
    for (size_t end; (end = pending.find("\n\n")) != std::string::npos;) {
      const std::string event = pending.substr(0, end);
      pending.erase(0, end + 2);
      if (event == "data: [DONE]") {
        s.done = true;
        continue;
      }
      const json chunk = json::parse(event.substr(6));
      for (const json& c : chunk["choices"]) {
        s.text += c["text"].get<std::string>();
        if (!c["finish_reason"].is_null()) s.finish_reason = c["finish_reason"];
      }
      if (++s.events == read_events) return s;
    }
  }
  return s;
}

std::string complete(int port, const json& body) {
  const HttpReply r = post(port, "/v1/completions", body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  return json::parse(r.body)["choices"][0]["text"];
}

json greedy(const std::string& prompt, int max_tokens) {
  return {{"model", "stories"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

const std::vector<std::string> kPrompts = {"Once upon a time",
                                           "The little dog",
                                           "Lily and Ben went to the park",
                                           "One day, a big",
                                           "Tom had a red ball. He",
                                           "The sun was",
                                           "Mom said",
                                           "There was a girl named Sue who liked to"};

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
  const std::string command =
      "node " + js + "/openai_server_test.mjs " + server_->url() + " stories " + kKey + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  ASSERT_NE(WEXITSTATUS(status), 127) << "node is not on PATH: run scripts/install-deps.sh";
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("checks passed"), std::string::npos) << output;
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

// The engine held behind the gate admits nothing, so of 16 requests sent at once exactly two
// wait (--max-waiting-requests 2) and the other 14 are refused with 503, Retry-After and code
// "overloaded"; once the engine runs, the two complete and the server serves again.
TEST(ServeLimits, OverloadGets503WithRetryAfterThenServes) {
  constexpr int kRequests = 16, kWaiting = 2;
  StepGate gate;
  ServeProcess server(
      serve_args({"--max-waiting-requests", std::to_string(kWaiting)}, gate.serve_args()));
  std::mutex mutex;
  std::condition_variable answered;
  int ok = 0, busy = 0, other = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i)
    threads.emplace_back([&, i] {
      json body = greedy(kPrompts[size_t(i) % kPrompts.size()], 100);
      body["ignore_eos"] = true;
      HttpReply r;
      try {
        r = post(server.port(), "/v1/completions", body.dump());
      } catch (const std::exception& e) {
        r.body = e.what();
      }
      std::lock_guard lock(mutex);
      if (r.status == 200)
        ok++;
      else if (r.status == 503 && r.headers.count("retry-after") &&
               r.body.find("\"code\":\"overloaded\"") != std::string::npos)
        busy++;
      else
        other++;
      answered.notify_all();
    });
  {
    std::unique_lock lock(mutex);
    EXPECT_TRUE(answered.wait_for(lock, std::chrono::seconds(60),
                                  [&] { return busy + other == kRequests - kWaiting; }))
        << busy << " refused of " << kRequests << " while the engine was held";
    EXPECT_EQ(ok, 0);
  }
  gate.open();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok, kWaiting);
  EXPECT_EQ(busy, kRequests - kWaiting);
  EXPECT_EQ(other, 0);
  EXPECT_FALSE(complete(server.port(), greedy("Once upon a time", 5)).empty());
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

// Without --host and --port the server listens on 127.0.0.1:8000: with that address held here,
// `dq4 serve` given neither fails on it (before it reads the model directory, which does not
// exist). Another process may hold the port for a while (this test in another checkout): the
// test waits for it to be released.
TEST(ServeLimits, ListensOnLoopbackPort8000ByDefault) {
  std::optional<Listener> held;
  ASSERT_TRUE(eventually([&] {
    try {
      held.emplace("127.0.0.1", 8000);
      return true;
    } catch (const Error&) {
      return false;
    }
  })) << "127.0.0.1:8000 stays taken by another process";
  const CliResult r = run_dq4("serve /nonexistent/dq4-model");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("cannot listen on 127.0.0.1:8000"), std::string::npos) << r.err;
}

// The port is bound before the model loads: with the port taken, `dq4 serve` on a directory that
// does not exist fails on the port (a load first would have failed on the directory).
TEST(ServeLimits, ATakenPortFailsBeforeTheModelLoads) {
  const Listener taken("127.0.0.1", 0);
  const std::string port = std::to_string(taken.port());
  const CliResult r = run_dq4("serve /nonexistent/dq4-model --port " + port);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("cannot listen on 127.0.0.1:" + port), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("dq4-model"), std::string::npos) << r.err;
}

// The test hook's option fails cleanly on a descriptor that is not open for reading.
TEST(ServeLimits, StepGateFdMustBeReadable) {
  for (const std::string fd : {"-1", "987654"}) {
    const CliResult r = run_dq4("serve /nonexistent/dq4-model --port 0 --step-gate-fd " + fd);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("option --step-gate-fd"), std::string::npos) << r.err;
  }
}

// --max-model-len bounds prompt + completion: announced by /v1/models, a request that fits
// exactly runs to it, one a token longer is refused.
TEST(ServeLimits, MaxModelLenBoundsEveryRequest) {
  constexpr int kLen = 48;
  ServeProcess server(serve_args({"--max-model-len", std::to_string(kLen)}));
  const json models = json::parse(get(server.port(), "/v1/models").body);
  EXPECT_EQ(models["data"][0]["max_model_len"], kLen) << models.dump();
  const std::string prompt = "Once upon a time";
  const int prompt_tokens =
      json::parse(post(server.port(), "/tokenize", json{{"prompt", prompt}}.dump()).body)["count"];
  json fits = greedy(prompt, kLen - prompt_tokens);
  fits["ignore_eos"] = true;
  const HttpReply r = post(server.port(), "/v1/completions", fits.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  EXPECT_EQ(j["usage"]["total_tokens"], kLen) << r.body;
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length") << r.body;
  const HttpReply over =
      post(server.port(), "/v1/completions", greedy(prompt, kLen - prompt_tokens + 1).dump());
  EXPECT_EQ(over.status, 400) << over.body;
  EXPECT_NE(over.body.find("maximum context length is 48"), std::string::npos) << over.body;
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

// 256 streaming requests at once through the real server: every one is running in the engine
// at the same moment (each has its first event, and none can have finished: the engine is let
// run 40 steps, a stream needs 150), then each completes whole.
TEST(ServeLimits, HoldsTwoHundredFiftySixStreamsAtOnce) {
  constexpr int kStreams = 256, kTokens = 150, kSteps = 40;
  StepGate gate;
  ServeProcess server(
      serve_args({"--max-num-seqs", "256", "--kv-cache-memory", "128MiB"}, gate.serve_args()));
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < kStreams; ++i) {
    json body = greedy(kPrompts[size_t(i) % kPrompts.size()], kTokens);
    body["ignore_eos"] = true;
    body["stream"] = true;
    clients.push_back(std::make_unique<HttpClient>("127.0.0.1", server.port()));
    clients.back()->send("POST", "/v1/completions", body.dump(), kAuth);
  }
  for (int i = 0; i < kStreams; ++i) ASSERT_EQ(clients[size_t(i)]->read_head().status, 200) << i;
  gate.allow(kSteps);
  std::vector<std::string> received(kStreams);
  for (int i = 0; i < kStreams; ++i) {
    while (received[size_t(i)].find("\n\n") == std::string::npos) {
      auto piece = clients[size_t(i)]->read_chunk();
      ASSERT_TRUE(piece.has_value()) << "stream " << i << " ended before its first event";
      received[size_t(i)] += *piece;
    }
  }
  EXPECT_EQ(metric(server.port(), "vllm:num_requests_running"), kStreams);
  gate.open();
  for (int i = 0; i < kStreams; ++i) {
    while (auto piece = clients[size_t(i)]->read_chunk()) received[size_t(i)] += *piece;
    const std::string& all = received[size_t(i)];
    EXPECT_NE(all.find("data: [DONE]\n\n"), std::string::npos) << i;
    EXPECT_NE(all.find("\"finish_reason\":\"length\""), std::string::npos) << i;
  }
  EXPECT_TRUE(eventually([&] { return metric(server.port(), "dq4_kv_cache_blocks_used") == 0; }));
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

class ServeShutdown : public ::testing::TestWithParam<int> {};

// Four streams are mid-generation (each has its first event; the engine is held after 10 of
// their 300 tokens) when the signal comes; only once the server has stopped taking requests does
// the engine run again, and every stream still ends whole before the server exits 0.
TEST_P(ServeShutdown, FinishesInFlightStreamsAndExitsZero) {
  StepGate gate;
  ServeProcess server(serve_args({}, gate.serve_args()));
  std::vector<Streamed> results(4);
  std::atomic<int> accepted{0}, streaming{0};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] {
      json body = greedy(kPrompts[i], 300);
      body["ignore_eos"] = true;
      body["stream"] = true;
      HttpClient client("127.0.0.1", server.port());
      client.send("POST", "/v1/completions", body.dump(), kAuth);
      results[i].status = client.read_head().status;
      accepted++;
      std::string all;
      bool first = true;
      while (auto piece = client.read_chunk()) {
        all += *piece;
        if (first && all.find("\n\n") != std::string::npos) {
          first = false;
          streaming++;
        }
      }
      results[i].done = all.find("data: [DONE]\n\n") != std::string::npos;
      results[i].text = all;
    });
  // Each stream's head comes once its request is queued, before any step.
  EXPECT_TRUE(eventually([&] { return accepted == 4; })) << accepted << " of 4 streams accepted";
  gate.allow(10);
  const bool started = eventually([&] { return streaming == 4; });
  EXPECT_TRUE(started) << streaming << " of 4 streams had their first event";
  server.send_signal(GetParam());
  EXPECT_TRUE(eventually([&] {
    try {
      return get(server.port(), "/health", "").status == 503;
    } catch (const std::exception&) {  // no longer accepting
      return true;
    }
  })) << "the server kept taking requests after the signal";
  gate.open();
  EXPECT_EQ(server.wait(60), 0) << server.log();
  for (std::thread& t : threads) t.join();
  for (const Streamed& s : results) {
    EXPECT_EQ(s.status, 200);
    EXPECT_TRUE(s.done);
    EXPECT_NE(s.text.find("\"finish_reason\":\"length\""), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Signals, ServeShutdown, ::testing::Values(SIGTERM, SIGINT),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::string(p.param == SIGTERM ? "Sigterm" : "Sigint");
                         });

}  // namespace
}  // namespace dq4::test

namespace dq4::test {
namespace {

// A port p with p+1 .. p+n free too (bind checks; the script binds them right after).
int free_port_block(int n) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int base =
        20000 + int((uint32_t(getpid()) * 7919u + uint32_t(attempt) * 104729u) % 40000u);
    bool all_free = true;
    for (int i = 0; i <= n && all_free; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(uint16_t(base + i));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      all_free = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
      close(fd);
    }
    if (all_free) return base;
  }
  throw std::runtime_error("no free block of loopback ports");
}

// scripts/serve-cluster.sh as a child, its replicas behind `gate`; stopped however the test ends
// (SIGTERM: it stops the balancer and the replicas, which finish their requests first, so the
// gate opens before).
class ClusterScript {
 public:
  ClusterScript(int port, const std::string& dir, const std::vector<std::string>& serve_options,
                StepGate& gate)
      : gate_(gate) {
    std::vector<std::string> args = {"bash", DQ4_SOURCE_DIR "/scripts/serve-cluster.sh", "2",
                                     model_dir(), "--"};
    args.insert(args.end(), serve_options.begin(), serve_options.end());
    for (const std::string& a : gate.serve_args()) args.push_back(a);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      setenv("PORT", std::to_string(port).c_str(), 1);
      setenv("DQ4", DQ4_CLI_PATH, 1);
      setenv("CLUSTER_DIR", dir.c_str(), 1);
      execv("/bin/bash", argv.data());
      _exit(127);
    }
  }
  ~ClusterScript() { stop(); }
  // SIGTERM, then its exit status as waitpid reports it (-1 when already stopped).
  int stop() {
    if (pid_ <= 0) return -1;
    gate_.open();
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  StepGate& gate_;
  pid_t pid_ = -1;
};

TEST(ServeCluster, TwoReplicasBehindHaproxySurviveLosingOne) {
  const int port = free_port_block(2);
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("dq4_cluster_" + std::to_string(getpid())))
          .string();
  std::filesystem::remove_all(dir);
  StepGate gate;  // both replicas read it: only one with a request to run takes steps
  ClusterScript script(port, dir,
                       {"--served-model-name", "stories", "--api-key", kKey, "--kv-cache-memory",
                        "64MiB", "--threads", "1"},
                       gate);
  const bool ready = eventually([&] { return std::filesystem::exists(dir + "/ready"); }) ||
                     eventually([&] { return std::filesystem::exists(dir + "/ready"); });
  ASSERT_TRUE(ready) << "the cluster did not come up; see " << dir;

  // Streams pass through the balancer unbuffered: the replica is held 8 steps into a 300-token
  // stream, so the stream cannot have ended, and its first event reaches the client through the
  // balancer all the same (a buffering proxy would hand nothing over before the end).
  {
    json b = greedy("Once upon a time", 300);
    b["ignore_eos"] = true;
    b["stream"] = true;
    HttpClient client("127.0.0.1", port);
    client.send("POST", "/v1/completions", b.dump(), kAuth);
    gate.allow(8);
    ASSERT_EQ(client.read_head().status, 200);
    std::string all;
    while (all.find("\n\n") == std::string::npos) {
      const auto piece = client.read_chunk();
      ASSERT_TRUE(piece.has_value()) << "the stream ended before its first event: " << all;
      all += *piece;
    }
    EXPECT_EQ(all.find("[DONE]"), std::string::npos) << all;
    gate.open();
    while (auto piece = client.read_chunk()) all += *piece;
    EXPECT_NE(all.find("data: [DONE]\n\n"), std::string::npos) << all.substr(0, 200);
  }

  const json body = greedy("Once upon a time", 200);
  std::vector<std::thread> streams;
  std::atomic<int> streaming{0};
  for (int i = 0; i < 4; ++i)
    streams.emplace_back([&] {
      json b = body;
      b["ignore_eos"] = true;
      b["stream"] = true;
      try {
        HttpClient client("127.0.0.1", port);
        client.send("POST", "/v1/completions", b.dump(), kAuth);
        if (client.read_head().status == 200) streaming++;
        while (client.read_chunk()) {
        }
      } catch (const std::exception&) {  // the streams of the replica killed break off
      }
    });
  ASSERT_TRUE(eventually([&] { return streaming == 4; }));
  std::ifstream pids(dir + "/replica_pids");
  pid_t victim = 0;
  pids >> victim;
  ASSERT_GT(victim, 0);
  kill(victim, SIGKILL);  // mid-run
  for (std::thread& t : streams) t.join();

  const std::string expected = complete(port, greedy("The little dog", 12));
  for (int i = 0; i < 10; ++i) {
    const HttpReply r = post(port, "/v1/completions", greedy("The little dog", 12).dump());
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(json::parse(r.body)["choices"][0]["text"], expected);
  }
  const int status = script.stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dq4::test
