#pragma once
// The HTTP/1.1 transport (Boost.Beast over Asio): keep-alive, pipelining, request bodies up to a
// limit, chunked streaming responses, and a client that disconnects or stalls noticed at once.
// While a request is answered, what the client sends next is read ahead (bounded) and parsed
// after the answer: a pipelined request waits its turn, and a close is still seen.
//
// Asynchronous I/O on a few threads, one strand per connection: a connection costs a socket and
// its buffers, not a thread, so hundreds of streaming clients are cheap. Everything written to a
// client goes through a queue whose size is bounded per connection; a client that lets it fill
// up is disconnected, so the engine (which only ever queues) is never held up by a slow reader.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "dq4/server/listener.h"
#include "http_exchange.h"

namespace dq4::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                      // 0: any free port (see HttpServer::port())
  size_t max_body_bytes = 8u << 20;     // larger bodies: 413
  size_t max_header_bytes = 16u << 10;  // larger headers: 431
  size_t max_queued_bytes = 4u << 20;   // per connection, unsent output
  // Open connections at most. At the cap a new connection closes the one idle the longest (no
  // request in progress); only when every connection is busy is the new one refused.
  int64_t max_connections = 4096;
  double keep_alive_timeout_seconds = 60;  // idle between requests
  double header_timeout_seconds = 60;      // a request's headers, then its body, each this long
  double write_timeout_seconds = 60;       // a write that makes no progress
  int threads = 2;                         // I/O threads
};

class HttpServer {
 public:
  // Binds and listens on options.host and options.port (throws dq4::Error naming them when it
  // cannot) and starts the I/O threads. `handler` runs on an I/O thread for every complete
  // request.
  HttpServer(const HttpServerOptions& options, HttpHandler handler);
  // The same on a socket already listening (options.host and options.port are not used).
  HttpServer(Listener listener, const HttpServerOptions& options, HttpHandler handler);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;  // the port bound
  // Stops accepting and closes idle connections; connections in an exchange close when it
  // ends. Requests still arriving on them get 503.
  void drain();
  int64_t open_connections() const;
  int64_t active_exchanges() const;  // requests not yet answered completely
  // Closes every connection and joins the I/O threads.
  void stop();

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace dq4::server
