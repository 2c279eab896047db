#pragma once
// A small blocking HTTP/1.1 client over one keep-alive connection (POSIX sockets): for
// `dq4 bench serve` and the server's tests. Reads Content-Length and chunked bodies, and a
// streamed body chunk by chunk as it arrives.

#include <map>
#include <optional>
#include <string>

namespace dq4::server {

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

class HttpClient {
 public:
  // Connects (throws dq4::Error naming host and port when it cannot). Reads and writes that make
  // no progress for `timeout_seconds` throw.
  HttpClient(const std::string& host, int port, double timeout_seconds = 60);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Writes one request (Content-Length body; `headers` are extra "Name: value\r\n" lines).
  void send(const std::string& method, const std::string& path, const std::string& body = "",
            const std::string& headers = "");
  void send_raw(const std::string& bytes);
  // Reads one whole response.
  HttpReply read_reply();
  // Reads a response's status line and headers; then read_chunk() gives the body piece by piece
  // (a chunk of a chunked body, or what arrived of a Content-Length / close-delimited one),
  // nullopt at its end.
  HttpReply read_head();
  std::optional<std::string> read_chunk();
  // Shuts the connection at once (a client going away mid-stream).
  void close();

 private:
  bool fill();  // reads more into buffer_; false at end of stream
  std::string read_line();
  std::string read_exact(size_t n);

  int fd_ = -1;
  std::string buffer_;
  size_t pos_ = 0;
  enum class Body { none, length, chunked, until_close } body_ = Body::none;
  size_t remaining_ = 0;
  std::string where_;
};

// "a" in "http://a:8000/v1": the parts of a base URL. Throws dq4::Error for anything else.
struct BaseUrl {
  std::string host;
  int port = 80;
  std::string path;  // without a trailing slash
};
BaseUrl parse_base_url(const std::string& url);

}  // namespace dq4::server
