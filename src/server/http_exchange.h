#pragma once
// One HTTP request and the channel its answer goes back through. The HTTP transport
// (http_server.h) fills in the request; the OpenAI routes (openai_service.h) answer it, at once
// or later from the engine's thread, as one response or as a stream of chunks.

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dq4::server {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // the target without its query string
  std::string authorization;
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // e.g. Retry-After
};

// Every method is thread-safe and never blocks: what is sent is queued for the client, and a
// client that falls too far behind is disconnected rather than allowed to hold anyone up.
class Exchange {
 public:
  virtual ~Exchange() = default;
  // The whole answer; ends the exchange.
  virtual void respond(HttpResponse response) = 0;
  // A streamed answer (server-sent events): the status line and headers, then send() any
  // number of times, then end().
  virtual void start_stream(int status, const std::string& content_type) = 0;
  // False when the client is gone or too far behind: stop producing.
  virtual bool send(std::string data) = 0;
  virtual void end() = 0;
  // `callback` runs once, on an I/O thread, if the client goes away before the exchange ends
  // (at once if it already has).
  virtual void on_disconnect(std::function<void()> callback) = 0;
};

using HttpHandler = std::function<void(HttpRequest, std::shared_ptr<Exchange>)>;

}  // namespace dq4::server
