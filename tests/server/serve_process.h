#pragma once
// A live `dq4 serve` for the end-to-end tests: started on a free loopback port (--port 0; the
// port is read from its start-up line), stopped with SIGTERM or SIGINT and its exit status checked.

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace dq4::test {

class ServeProcess {
 public:
  // Runs DQ4_CLI_PATH serve `args` --port 0 (`args` alone when not `any_port`); waits (at most
  // 60 s) until it listens. Throws std::runtime_error with its log when it exits or never
  // listens.
  explicit ServeProcess(const std::vector<std::string>& args, bool any_port = true);
  ~ServeProcess();  // SIGKILL if still running
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Sends `signal` (SIGTERM or SIGINT: both shut down gracefully), then waits at most `seconds`;
  // the exit status (-1: killed by a signal / timeout).
  int terminate(double seconds = 30, int signal = SIGTERM);
  // The two halves of terminate(), for a test that acts between them.
  void send_signal(int signal);
  int wait(double seconds);
  std::string log() const;  // everything it wrote to stderr so far

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
};

// The value of the first sample on a line starting with `prefix` in the /metrics of the server
// on `port`, or -1 when there is none.
double metric(int port, const std::string& prefix);

}  // namespace dq4::test
