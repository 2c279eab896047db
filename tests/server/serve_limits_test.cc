// `dq4 serve`'s limits and lifecycle on the stories260K fixture: overload, the default listener,
// a taken port, --max-model-len, 256 streams at once, graceful shutdown on SIGINT and SIGTERM.

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
