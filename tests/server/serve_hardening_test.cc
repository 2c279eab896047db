// A live `dq4 serve` (the stories260K fixture) against what an outside probe found: its model
// file truncated under it, connections held idle up to the cap, a client that pipelines a
// request and leaves, authentication keys that could never work, a second signal, a KV cache
// larger than the machine, and the wording of option errors.

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../cli_runner.h"
#include "../fixtures.h"
#include "dq4/kernels/error.h"
#include "eventually.h"
#include "http_client.h"
#include "serve_process.h"

namespace dq4::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using server::HttpClient;
using server::HttpReply;

const std::string kKey = "test-key";
const std::string kAuth = "Authorization: Bearer " + kKey + "\r\n";

std::string model_dir() { return fixtures_dir() + "/stories260K-hf"; }

std::vector<std::string> serve_args(const std::string& model, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {model, "--served-model-name", "stories", "--api-key",
                                   kKey,  "--kv-cache-memory",   "64MiB",   "--threads",
                                   "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

HttpReply request(int port, const std::string& method, const std::string& path,
                  const std::string& body = "", const std::string& headers = kAuth) {
  HttpClient client("127.0.0.1", port);
  client.send(method, path, body, headers);
  return client.read_reply();
}

json greedy(const std::string& prompt, int max_tokens) {
  return {{"model", "stories"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

std::string complete(int port, const json& body) {
  const HttpReply r = request(port, "POST", "/v1/completions", body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body, nullptr, false);
  return j.is_object() ? j["choices"][0]["text"].get<std::string>() : "";
}

// Whether the server closed `client`'s connection (reading gets its end, not a response).
bool closed_by_server(HttpClient& client) {
  try {
    client.read_reply();
    return false;
  } catch (const Error&) {
    return true;
  }
}

// What `dq4 serve args` says when it exits before listening ("it listened" when it does not).
std::string startup_error(const std::vector<std::string>& args) {
  try {
    ServeProcess server(args);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "it listened";
}

// A copy of the fixture in a fresh directory, removed at the end.
class ModelCopy {
 public:
  ModelCopy() {
    dir_ = (fs::temp_directory_path() / ("dq4_hardening_" + std::to_string(getpid()))).string();
    fs::remove_all(dir_);
    fs::copy(model_dir(), dir_, fs::copy_options::recursive);
  }
  ~ModelCopy() { fs::remove_all(dir_); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

// The weights are read out of the model files at load, none at run time: emptying the
// safetensors file under the running server (what `truncate -s 0` or a `cp` of a new download
// does) leaves every request answered as before.
TEST(ServeHardening, KeepsServingWhenItsModelFileIsTruncated) {
  const ModelCopy model;
  ServeProcess server(serve_args(model.dir()));
  const json body = greedy("Once upon a time", 40);
  const std::string before = complete(server.port(), body);
  ASSERT_FALSE(before.empty());
  std::vector<fs::path> truncated;
  for (const auto& entry : fs::directory_iterator(model.dir()))
    if (entry.path().extension() == ".safetensors") {
      fs::resize_file(entry.path(), 0);  // truncate -s 0
      truncated.push_back(entry.path());
    }
  ASSERT_FALSE(truncated.empty());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(complete(server.port(), body), before) << i;
  EXPECT_FALSE(complete(server.port(), greedy("The little dog", 30)).empty());
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

// At --max-connections, a new connection closes the one idle the longest: idle clients cannot
// lock a fresh request out, and the other idle ones keep their connections.
TEST(ServeHardening, IdleConnectionsAtTheCapMakeRoomForANewRequest) {
  constexpr int kCap = 4;
  ServeProcess server(serve_args(model_dir(), {"--max-connections", std::to_string(kCap)}));
  std::vector<std::unique_ptr<HttpClient>> idle;
  for (int i = 0; i < kCap; ++i) {  // each served once, then left open
    idle.push_back(std::make_unique<HttpClient>("127.0.0.1", server.port()));
    idle.back()->send("GET", "/v1/models", "", kAuth);
    ASSERT_EQ(idle.back()->read_reply().status, 200) << i;
  }
  EXPECT_FALSE(complete(server.port(), greedy("Once upon a time", 5)).empty());
  EXPECT_TRUE(closed_by_server(*idle[0]));  // the oldest idle one made room
  idle[1]->send("GET", "/v1/models", "", kAuth);
  EXPECT_EQ(idle[1]->read_reply().status, 200);
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

// --timeout-keep-alive closes a connection idle after a response; --timeout-headers one whose
// request never completes its headers.
TEST(ServeHardening, IdleAndSlowConnectionsTimeOut) {
  ServeProcess server(serve_args(model_dir(), {"--timeout-keep-alive", "0.2", "--timeout-headers",
                                               "0.2", "--max-connections", "64"}));
  HttpClient kept("127.0.0.1", server.port());
  kept.send("GET", "/v1/models", "", kAuth);
  ASSERT_EQ(kept.read_reply().status, 200);
  EXPECT_TRUE(closed_by_server(kept));
  HttpClient slow("127.0.0.1", server.port());
  slow.send_raw("GET /v1/models HTTP/1.1\r\nHost: x\r\n");  // and never the blank line
  EXPECT_TRUE(closed_by_server(slow));
  EXPECT_EQ(request(server.port(), "GET", "/health", "", "").status, 200);
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

// A non-streamed request with another pipelined behind it, then the client leaves: the server
// still sees the close and aborts the request. It waits behind a long stream (one sequence at a
// time), so it cannot have finished when the client goes.
TEST(ServeHardening, AClientThatPipelinesAndLeavesGetsItsRequestAborted) {
  ServeProcess server(serve_args(model_dir(), {"--max-num-seqs", "1"}));
  const std::string aborted =
      "vllm:request_success_total{model_name=\"stories\",finished_reason=\"abort\"}";
  const double aborted_before = std::max(0.0, metric(server.port(), aborted));
  json long_stream = greedy("Once upon a time", 400);
  long_stream["ignore_eos"] = true;
  long_stream["stream"] = true;
  HttpClient streaming("127.0.0.1", server.port());
  streaming.send("POST", "/v1/completions", long_stream.dump(), kAuth);
  ASSERT_EQ(streaming.read_head().status, 200);
  ASSERT_TRUE(streaming.read_chunk().has_value());
  {
    json abandoned = greedy("The little dog", 400);
    abandoned["ignore_eos"] = true;
    const std::string payload = abandoned.dump();
    HttpClient leaving("127.0.0.1", server.port());
    leaving.send_raw(
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + kAuth +
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(payload.size()) +
        "\r\n\r\n" + payload + "GET /v1/models HTTP/1.1\r\nHost: x\r\n" + kAuth + "\r\n");
  }  // closed at once: its request waits behind the stream, or has just started
  while (streaming.read_chunk()) {
  }
  EXPECT_TRUE(eventually([&] {
    return metric(server.port(), "vllm:num_requests_running") == 0 &&
           metric(server.port(), "vllm:num_requests_waiting") == 0;
  }));
  EXPECT_EQ(metric(server.port(), aborted), aborted_before + 1);
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

// Transfer codings that do not end in one "chunked" leave the body's length unknown: 400 and
// the connection closed, never the body read as a second request.
TEST(ServeHardening, TransferEncodingNotEndingInChunkedIsRefusedAndCloses) {
  ServeProcess server(serve_args(model_dir()));
  for (const char* coding : {"gzip", "identity", "xchunked", "chunked, gzip", "gzip, chunked"}) {
    SCOPED_TRACE(coding);
    HttpClient client("127.0.0.1", server.port());
    client.send_raw(std::string("POST /v1/completions HTTP/1.1\r\nHost: x\r\n") + kAuth +
                    "Transfer-Encoding: " + coding +
                    "\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n" + kAuth + "\r\n");
    const HttpReply r = client.read_reply();
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.headers.at("connection"), "close");
    EXPECT_TRUE(closed_by_server(client));
  }
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

// Sets an environment variable (which the servers started meanwhile inherit) for its lifetime.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

// An empty key (e.g. --api-key "$UNSET") would silently serve without authentication, and one
// with surrounding whitespace could never match: both refused, from the option or DQ4_API_KEY.
TEST(ServeHardening, ApiKeysThatCannotWorkAreRefused) {
  const std::vector<std::string> model = {model_dir(), "--kv-cache-memory", "64MiB"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = model;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  EXPECT_NE(startup_error(with({"--api-key", ""})).find("option --api-key is empty"),
            std::string::npos);
  EXPECT_NE(startup_error(with({"--api-key", "secret "}))
                .find("option --api-key: the API key starts or ends with whitespace"),
            std::string::npos);
  EXPECT_NE(startup_error(with({"--api-key", " secret"})).find("whitespace"), std::string::npos);
  {
    const ScopedEnv empty("DQ4_API_KEY", "");
    EXPECT_NE(startup_error(model).find("DQ4_API_KEY is empty"), std::string::npos);
  }
  const ScopedEnv padded("DQ4_API_KEY", "secret\t");
  EXPECT_NE(startup_error(model).find("DQ4_API_KEY: the API key starts or ends"),
            std::string::npos);
}

// DQ4_API_KEY gives the key when --api-key does not.
TEST(ServeHardening, ApiKeyComesFromTheEnvironmentUnlessGiven) {
  const ScopedEnv key("DQ4_API_KEY", "from-env");
  {
    ServeProcess server({model_dir(), "--kv-cache-memory", "64MiB", "--threads", "1"});
    EXPECT_EQ(request(server.port(), "GET", "/v1/models", "", "").status, 401);
    EXPECT_EQ(request(server.port(), "GET", "/v1/models", "", kAuth).status, 401);
    EXPECT_EQ(request(server.port(), "GET", "/v1/models", "", "Authorization: Bearer from-env\r\n")
                  .status,
              200);
    EXPECT_EQ(server.terminate(), 0) << server.log();
  }
  {
    ServeProcess server(serve_args(model_dir()));  // --api-key wins
    EXPECT_EQ(request(server.port(), "GET", "/v1/models", "", kAuth).status, 200);
    EXPECT_EQ(request(server.port(), "GET", "/v1/models", "", "Authorization: Bearer from-env\r\n")
                  .status,
              401);
    EXPECT_EQ(server.terminate(), 0) << server.log();
  }
}

// The first SIGTERM starts the graceful drain; a second one ends the process at once, with
// status 128 + SIGTERM instead of the drain's 0. The drain has a queue of long requests to
// finish (one sequence at a time, each hundreds of steps), so it is still going when the second
// signal comes.
TEST(ServeHardening, ASecondSignalDuringTheDrainExitsAtOnce) {
  constexpr int kQueued = 24;
  ServeProcess server(serve_args(model_dir(), {"--max-num-seqs", "1"}));
  json body = greedy("Once upon a time", 480);
  body["ignore_eos"] = true;
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < kQueued; ++i) {
    clients.push_back(std::make_unique<HttpClient>("127.0.0.1", server.port()));
    clients.back()->send("POST", "/v1/completions", body.dump(), kAuth);
  }
  ASSERT_TRUE(eventually(
      [&] { return metric(server.port(), "vllm:num_requests_waiting") >= kQueued / 2; }));
  EXPECT_EQ(server.terminate(0), -1);  // sent; not waited for
  ASSERT_TRUE(eventually([&] { return server.log().find("shutting down") != std::string::npos; }))
      << server.log();
  EXPECT_EQ(server.terminate(30), 128 + SIGTERM) << server.log();
  EXPECT_NE(server.log().find("second signal"), std::string::npos) << server.log();
}

// A KV cache larger than the machine's memory is a clear error, not std::bad_alloc; an option
// error names the option with two dashes.
TEST(ServeHardening, StartupErrorsSayWhatIsWrong) {
  const std::string huge = startup_error({model_dir(), "--kv-cache-memory", "1TiB"});
  EXPECT_NE(huge.find("of memory available"), std::string::npos) << huge;
  EXPECT_EQ(huge.find("bad_alloc"), std::string::npos) << huge;
  for (const auto& [option, value] :
       std::vector<std::pair<std::string, std::string>>{{"--kv-cache-memory", "lots"},
                                                        {"--max-body-size", "0"},
                                                        {"--max-connections", "0"},
                                                        {"--timeout-keep-alive", "-1"},
                                                        {"--timeout-headers", "soon"}}) {
    const std::string error = startup_error({model_dir(), option, value});
    EXPECT_NE(error.find("error: option " + option), std::string::npos) << error;
    EXPECT_EQ(error.find("----"), std::string::npos) << error;
  }
}

TEST(ServeHardening, HelpDocumentsTheConnectionOptions) {
  const CliResult r = run_dq4("serve --help");
  ASSERT_EQ(r.exit_code, 0);
  for (const char* option :
       {"--max-connections", "--timeout-keep-alive", "--timeout-headers", "DQ4_API_KEY"})
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
}

}  // namespace
}  // namespace dq4::test
