#include "serve_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "http_client.h"

namespace dq4::test {

ServeProcess::ServeProcess(const std::vector<std::string>& args, bool any_port) {
  static int counter = 0;
  log_path_ = (std::filesystem::temp_directory_path() /
               ("dq4_serve_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + ".log"))
                  .string();
  std::vector<std::string> argv_strings = {DQ4_CLI_PATH, "serve"};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  if (any_port) argv_strings.insert(argv_strings.end(), {"--port", "0"});
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    FILE* log = std::fopen(log_path_.c_str(), "w");
    if (log) dup2(fileno(log), STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  const std::regex listening(R"(on http://127\.0\.0\.1:([0-9]+))");
  for (int i = 0; i < 6000; ++i) {
    std::smatch m;
    const std::string text = log();
    if (std::regex_search(text, m, listening)) {
      port_ = std::stoi(m[1]);
      return;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("dq4 serve exited before listening:\n" + text);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("dq4 serve did not listen within 60 s:\n" + log());
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  std::filesystem::remove(log_path_);
}

int ServeProcess::terminate(double seconds, int signal) {
  send_signal(signal);
  return wait(seconds);
}

void ServeProcess::send_signal(int signal) {
  if (pid_ > 0) kill(pid_, signal);
}

int ServeProcess::wait(double seconds) {
  if (pid_ <= 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

std::string ServeProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double metric(int port, const std::string& prefix) {
  server::HttpClient client("127.0.0.1", port);
  client.send("GET", "/metrics", "", "");
  const std::string text = client.read_reply().body;
  for (size_t at = 0; (at = text.find(prefix, at)) != std::string::npos; ++at)
    if (at == 0 || text[at - 1] == '\n') {
      const size_t end = text.find('\n', at);
      const size_t space = text.rfind(' ', end);
      return std::stod(text.substr(space + 1, end - space - 1));
    }
  return -1;
}

}  // namespace dq4::test
