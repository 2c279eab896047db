#pragma once
// `dq4 serve --step-gate-fd FD`, for tests: the engine runs one step per byte it reads from FD (a
// pipe the test writes to), so a test decides how far the engine gets while it sends requests,
// reads streams or signals the server. Once FD reaches its end (the test closed the write end,
// or exited) the engine runs freely.

namespace dq4::cli {

class PipeStepGate {
 public:
  // Throws dq4::Error naming the option when `fd` is not open for reading.
  explicit PipeStepGate(int fd);
  // Before each step, on the engine's loop thread: returns after one byte, or at once for good
  // from the end of the pipe (or a read error: a gate that cannot be read holds nothing).
  void wait();

 private:
  int fd_;
  bool open_ = false;
};

}  // namespace dq4::cli
