#pragma once
// The OpenAI-compatible HTTP server over an Engine: /v1/completions, /v1/chat/completions (both
// streamed as server-sent events or not), /v1/models, /tokenize, /detokenize, /health and
// /metrics (Prometheus text, vLLM's metric names).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "dq4/engine/engine.h"
#include "dq4/server/listener.h"
#include "dq4/tokenizer/chat_template.h"
#include "dq4/tokenizer/tokenizer.h"

namespace dq4 {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port (Server::port() says which)
  // Bearer token every endpoint but /health and /metrics needs; empty: none. One with leading or
  // trailing whitespace or a control character could never match a header: refused.
  std::string api_key;
  std::string served_model_name;  // the name clients pass as "model"
  // Tool calls' format, vLLM's names: "hermes", "llama3_json", "mistral"; empty: the chat
  // template's (from the markers it writes), if it shows one.
  std::string tool_call_parser;
  // "qwen3" or "deepseek_r1": <think> reasoning goes to reasoning_content; empty: none.
  std::string reasoning_parser;
  size_t max_body_bytes = 8u << 20;
  size_t max_queued_bytes = 4u << 20;  // unsent output per connection before it is dropped
  // Open connections at most; at the cap a new one closes the one idle the longest.
  int64_t max_connections = 4096;
  double keep_alive_timeout_seconds = 60;  // an idle connection closes after this long
  double header_timeout_seconds = 60;      // a request's headers, then its body, each this long
  int http_threads = 2;
  // On shutdown, in-flight requests get this long to finish before they are aborted.
  double shutdown_timeout_seconds = 30;
};

// Throws dq4::Error when a client could never send `key` in an Authorization header: leading or
// trailing whitespace (HTTP drops it) or a control character. An empty key (no key) passes.
void check_api_key(const std::string& key);
// Throws dq4::Error for a tool_call_parser or reasoning_parser dq4 does not know.
void check_parsers(const ServerOptions& options);

class Server {
 public:
  // Listens at once (throws dq4::Error when it cannot). `engine` must be started and, like the
  // tokenizer and the chat template (null: chat requests get 400), outlive the server.
  Server(Engine& engine, const Tokenizer& tokenizer, const ChatTemplate* chat_template,
         const ServerOptions& options);
  // The same on a socket opened beforehand (options.host and options.port are not used).
  Server(Engine& engine, const Tokenizer& tokenizer, const ChatTemplate* chat_template,
         const ServerOptions& options, Listener listener);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;
  // Blocks until SIGTERM or SIGINT (or request_shutdown()), then shuts down gracefully; a second
  // SIGTERM or SIGINT meanwhile exits the process at once (status 128 + the signal's number).
  void run_until_signal();
  // Thread-safe: makes run_until_signal() return after its graceful shutdown.
  void request_shutdown();
  // Stops accepting, lets in-flight requests finish (up to shutdown_timeout_seconds), aborts
  // the rest through engine.stop(abort), answers them, closes every connection.
  void shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dq4
