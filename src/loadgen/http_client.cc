#include "http_client.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "dq4/kernels/error.h"

namespace dq4::server {
namespace {

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

HttpClient::HttpClient(const std::string& host, int port, double timeout_seconds)
    : where_(host + ":" + std::to_string(port)) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found)
    throw Error("http client: cannot resolve " + where_);
  for (addrinfo* a = found; a && fd_ < 0; a = a->ai_next) {
    fd_ = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd_ < 0) continue;
    if (::connect(fd_, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  freeaddrinfo(found);
  if (fd_ < 0)
    throw Error("http client: cannot connect to " + where_ + ": " + std::strerror(errno));
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_seconds);
  tv.tv_usec = static_cast<suseconds_t>((timeout_seconds - double(tv.tv_sec)) * 1e6);
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

HttpClient::~HttpClient() { close(); }

void HttpClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void HttpClient::send_raw(const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    if (fd_ < 0) throw Error("http client: " + where_ + ": connection closed");
    const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("http client: " + where_ + ": send failed: " + std::strerror(errno));
    done += size_t(n);
  }
}

void HttpClient::send(const std::string& method, const std::string& path, const std::string& body,
                      const std::string& headers) {
  std::string request = method + " " + path + " HTTP/1.1\r\nHost: " + where_ + "\r\n" + headers;
  if (!body.empty() || method == "POST")
    request +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  send_raw(request + "\r\n" + body);
}

bool HttpClient::fill() {
  if (fd_ < 0) return false;
  if (pos_ > 0 && pos_ == buffer_.size()) {
    buffer_.clear();
    pos_ = 0;
  }
  char data[16384];
  for (;;) {
    const ssize_t n = ::recv(fd_, data, sizeof data, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      throw Error("http client: " + where_ + ": timed out waiting for the server");
    if (n <= 0) return false;
    buffer_.append(data, size_t(n));
    return true;
  }
}

std::string HttpClient::read_line() {
  for (;;) {
    const size_t end = buffer_.find("\r\n", pos_);
    if (end != std::string::npos) {
      std::string line = buffer_.substr(pos_, end - pos_);
      pos_ = end + 2;
      return line;
    }
    if (buffer_.size() - pos_ > 65536) throw Error("http client: " + where_ + ": line too long");
    if (!fill()) throw Error("http client: " + where_ + ": connection closed mid-response");
  }
}

std::string HttpClient::read_exact(size_t n) {
  while (buffer_.size() - pos_ < n)
    if (!fill()) throw Error("http client: " + where_ + ": connection closed mid-body");
  std::string out = buffer_.substr(pos_, n);
  pos_ += n;
  return out;
}

HttpReply HttpClient::read_head() {
  HttpReply reply;
  std::string status_line;
  do {  // skips interim 1xx responses
    status_line = read_line();
    if (status_line.size() < 12 || status_line.compare(0, 5, "HTTP/") != 0)
      throw Error("http client: " + where_ + ": bad status line '" + status_line + "'");
    reply.status = std::stoi(status_line.substr(9, 3));
    reply.headers.clear();
    for (std::string line = read_line(); !line.empty(); line = read_line()) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      reply.headers[lower(line.substr(0, colon))] = trim(line.substr(colon + 1));
    }
  } while (reply.status >= 100 && reply.status < 200);
  if (lower(reply.headers["transfer-encoding"]) == "chunked") {
    body_ = Body::chunked;
  } else if (reply.headers.count("content-length")) {
    body_ = Body::length;
    remaining_ = std::stoull(reply.headers["content-length"]);
  } else {
    body_ = reply.status == 204 || reply.status == 304 ? Body::none : Body::until_close;
  }
  return reply;
}

std::optional<std::string> HttpClient::read_chunk() {
  switch (body_) {
    case Body::none:
      return std::nullopt;
    case Body::length: {
      if (remaining_ == 0) {
        body_ = Body::none;
        return std::nullopt;
      }
      if (pos_ == buffer_.size() && !fill())
        throw Error("http client: " + where_ + ": connection closed mid-body");
      const size_t n = std::min(remaining_, buffer_.size() - pos_);
      std::string out = buffer_.substr(pos_, n);
      pos_ += n;
      remaining_ -= n;
      return out;
    }
    case Body::chunked: {
      const size_t size = std::stoull(read_line(), nullptr, 16);
      if (size == 0) {
        while (!read_line().empty()) {  // trailers
        }
        body_ = Body::none;
        return std::nullopt;
      }
      std::string out = read_exact(size);
      if (!read_line().empty()) throw Error("http client: " + where_ + ": bad chunk framing");
      return out;
    }
    case Body::until_close: {
      if (pos_ == buffer_.size() && !fill()) {
        body_ = Body::none;
        return std::nullopt;
      }
      std::string out = buffer_.substr(pos_);
      pos_ = buffer_.size();
      return out;
    }
  }
  return std::nullopt;
}

HttpReply HttpClient::read_reply() {
  HttpReply reply = read_head();
  while (auto piece = read_chunk()) reply.body += *piece;
  return reply;
}

BaseUrl parse_base_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.compare(0, scheme.size(), scheme) != 0)
    throw Error("'" + url + "': expected an http:// URL (https is not supported)");
  std::string rest = url.substr(scheme.size());
  BaseUrl base;
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    base.path = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  while (!base.path.empty() && base.path.back() == '/') base.path.pop_back();
  const size_t colon = rest.rfind(':');
  base.host = rest.substr(0, colon);
  if (colon != std::string::npos) {
    const std::string port = rest.substr(colon + 1);
    if (port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string::npos)
      throw Error("'" + url + "': bad port");
    base.port = std::stoi(port);
  }
  if (base.host.empty()) throw Error("'" + url + "': no host");
  return base;
}

}  // namespace dq4::server
