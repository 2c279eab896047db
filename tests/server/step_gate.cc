#include "step_gate.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace dq4::test {

StepGate::StepGate() {
  int ends[2];
  // The write end is closed on exec, so that the test alone holds it and its closing is the
  // pipe's end for every reader.
  if (pipe2(ends, O_CLOEXEC) != 0 || fcntl(ends[0], F_SETFD, 0) != 0)
    throw std::runtime_error("StepGate: cannot make a pipe");
  read_end_ = ends[0];
  write_end_ = ends[1];
}

StepGate::~StepGate() {
  open();
  close(read_end_);
}

std::vector<std::string> StepGate::serve_args() const {
  return {"--step-gate-fd", std::to_string(read_end_)};
}

void StepGate::allow(int steps) {
  const std::string bytes(static_cast<size_t>(steps), 's');
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = write(write_end_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("StepGate: cannot write to the pipe");
    done += static_cast<size_t>(n);
  }
}

void StepGate::open() {
  if (write_end_ < 0) return;
  close(write_end_);
  write_end_ = -1;
}

}  // namespace dq4::test
