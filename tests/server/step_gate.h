#pragma once
// The test's end of `dq4 serve --step-gate-fd`: a pipe whose read end the servers started after
// it inherit, and whose write end stays with the test. A server behind the gate runs one engine
// step per byte the test writes, so the test decides how far generation gets: requests arrive,
// wait or are refused, streams start, while no step runs.

#include <string>
#include <vector>

namespace dq4::test {

class StepGate {
 public:
  StepGate();   // throws std::runtime_error when the pipe cannot be made
  ~StepGate();  // opens the gate
  StepGate(const StepGate&) = delete;
  StepGate& operator=(const StepGate&) = delete;

  // The `dq4 serve` options that put a server behind this gate.
  std::vector<std::string> serve_args() const;
  // Lets the engines behind the gate run `steps` more steps, in all.
  void allow(int steps);
  // Lets them run freely from now on (the pipe's end).
  void open();

 private:
  int read_end_ = -1, write_end_ = -1;
};

}  // namespace dq4::test
