// Two `dq4 serve` replicas behind HAProxy (scripts/serve-cluster.sh): streams pass through
// unbuffered and the cluster survives losing a replica.

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
