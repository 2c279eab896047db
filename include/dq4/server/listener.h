#pragma once
// A TCP socket bound to an address and port and listening, apart from the server that will accept
// on it. `dq4 serve` opens it before it loads the model, so a port already taken is reported in
// milliseconds instead of after the load; clients that connect meanwhile wait in the backlog.

#include <string>

namespace dq4 {

class Listener {
 public:
  // Throws dq4::Error naming host and port when the address is bad or the port cannot be bound.
  // Port 0: any free port (port() says which).
  Listener(const std::string& host, int port);
  ~Listener();  // closes the socket unless released
  Listener(Listener&& other) noexcept;
  Listener& operator=(Listener&&) = delete;
  Listener(const Listener&) = delete;

  int port() const { return port_; }
  bool ipv6() const { return ipv6_; }
  // Hands the socket's descriptor to the caller, who closes it from then on.
  int release();

 private:
  int fd_ = -1;
  int port_ = 0;
  bool ipv6_ = false;
};

}  // namespace dq4
