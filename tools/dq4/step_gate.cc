#include "step_gate.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "dq4/kernels/error.h"

namespace dq4::cli {

PipeStepGate::PipeStepGate(int fd) : fd_(fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags == -1 || (flags & O_ACCMODE) == O_WRONLY)
    throw Error("option --step-gate-fd: " + std::to_string(fd) +
                " is not a file descriptor open for reading");
}

void PipeStepGate::wait() {
  while (!open_) {
    char byte;
    const ssize_t n = read(fd_, &byte, 1);
    if (n == 1) return;
    if (n == -1 && errno == EINTR) continue;
    open_ = true;
  }
}

}  // namespace dq4::cli
