#include "dq4/server/listener.h"

#include <unistd.h>

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including <utility>.
// clang-format off
#include <utility>
#include <boost/asio.hpp>
// clang-format on

#include "dq4/kernels/error.h"

namespace dq4 {

Listener::Listener(const std::string& host, int port) {
  const std::string where = host + ":" + std::to_string(port);
  if (port < 0 || port > 65535)
    throw Error("cannot listen on " + where + ": the port must be 0 to 65535");
  namespace net = boost::asio;
  using tcp = net::ip::tcp;
  try {
    net::io_context ioc;
    tcp::acceptor acceptor(ioc);
    const tcp::endpoint endpoint(net::ip::make_address(host), static_cast<unsigned short>(port));
    acceptor.open(endpoint.protocol());
    acceptor.set_option(net::socket_base::reuse_address(true));
    acceptor.bind(endpoint);
    acceptor.listen(net::socket_base::max_listen_connections);
    port_ = acceptor.local_endpoint().port();
    ipv6_ = endpoint.protocol() == tcp::v6();
    fd_ = acceptor.release();
  } catch (const boost::system::system_error& e) {
    throw Error("cannot listen on " + where + ": " + e.code().message());
  }
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
}

Listener::Listener(Listener&& other) noexcept
    : fd_(other.fd_), port_(other.port_), ipv6_(other.ipv6_) {
  other.fd_ = -1;
}

int Listener::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

}  // namespace dq4
