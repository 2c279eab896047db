#include "dq4/server/server.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "dq4/constrain/constraint.h"
#include "dq4/kernels/error.h"
#include "http_server.h"
#include "openai_service.h"

namespace dq4 {
namespace {

std::atomic<bool> g_signalled{false};

// The first signal starts the graceful shutdown; a second one (an impatient operator, or a
// supervisor escalating) ends the process at once. Only async-signal-safe calls here.
extern "C" void on_signal(int signal) {
  if (g_signalled.exchange(true)) {
    static constexpr char kMessage[] = "dq4 serve: second signal, exiting now\n";
    [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    ::_exit(128 + signal);
  }
}

// Polls `done` every 10 ms for at most `seconds`.
template <class F>
bool wait_for(F done, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace

void check_api_key(const std::string& key) {
  if (key.empty()) return;
  const auto space = [](unsigned char c) { return c == ' ' || c == '\t'; };
  if (space(static_cast<unsigned char>(key.front())) ||
      space(static_cast<unsigned char>(key.back())))
    throw Error(
        "the API key starts or ends with whitespace, which HTTP headers drop: no client "
        "could ever match it");
  for (const unsigned char c : key)
    if (c < 0x20 || c == 0x7f)
      throw Error("the API key holds a control character: no client could ever send it");
}

void check_parsers(const ServerOptions& options) {
  if (!options.tool_call_parser.empty() && !server::tool_format_from_name(options.tool_call_parser))
    throw Error("unknown tool-call parser '" + options.tool_call_parser +
                "' (known: hermes, llama3_json, mistral)");
  if (!options.reasoning_parser.empty() &&
      !server::reasoning_format_from_name(options.reasoning_parser))
    throw Error("unknown reasoning parser '" + options.reasoning_parser +
                "' (known: qwen3, deepseek_r1)");
}

struct Server::Impl {
  Engine& engine;
  ServerOptions options;
  std::unique_ptr<constrain::Compiler> compiler;
  std::unique_ptr<server::OpenAiService> service;
  std::unique_ptr<server::HttpServer> http;
  std::atomic<bool> shutdown_requested{false};
  bool shut_down = false;
};

Server::Server(Engine& engine, const Tokenizer& tokenizer, const ChatTemplate* chat_template,
               const ServerOptions& options)
    : Server(engine, tokenizer, chat_template, options, Listener(options.host, options.port)) {}

Server::Server(Engine& engine, const Tokenizer& tokenizer, const ChatTemplate* chat_template,
               const ServerOptions& options, Listener listener)
    : impl_(new Impl{engine, options, nullptr, nullptr, nullptr}) {
  if (options.served_model_name.empty()) throw Error("ServerOptions: served_model_name is empty");
  check_api_key(options.api_key);
  server::ServiceOptions service{options.served_model_name, options.api_key};
  check_parsers(options);
  if (!options.tool_call_parser.empty())
    service.tool_format = *server::tool_format_from_name(options.tool_call_parser);
  if (!options.reasoning_parser.empty())
    service.reasoning = *server::reasoning_format_from_name(options.reasoning_parser);
  Impl* impl = impl_.get();
  impl->compiler =
      std::make_unique<constrain::Compiler>(tokenizer, engine.vocab_size(), engine.eos_ids());
  impl->service = std::make_unique<server::OpenAiService>(
      engine, tokenizer, chat_template, *impl->compiler, std::move(service), [impl] {
        return server::HttpCounters{impl->http ? impl->http->open_connections() : 0,
                                    impl->http ? impl->http->active_exchanges() : 0};
      });
  server::HttpServerOptions http;
  http.max_body_bytes = options.max_body_bytes;
  http.max_queued_bytes = options.max_queued_bytes;
  http.max_connections = options.max_connections;
  http.keep_alive_timeout_seconds = options.keep_alive_timeout_seconds;
  http.header_timeout_seconds = options.header_timeout_seconds;
  http.threads = options.http_threads;
  impl->http = std::make_unique<server::HttpServer>(
      std::move(listener), http,
      [service = impl->service.get()](server::HttpRequest request,
                                      std::shared_ptr<server::Exchange> exchange) {
        service->handle(std::move(request), std::move(exchange));
      });
}

Server::~Server() { shutdown(); }

int Server::port() const { return impl_->http->port(); }

void Server::request_shutdown() { impl_->shutdown_requested = true; }

void Server::run_until_signal() {
  g_signalled = false;
  auto previous_int = std::signal(SIGINT, on_signal);
  auto previous_term = std::signal(SIGTERM, on_signal);
  while (!g_signalled && !impl_->shutdown_requested)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (g_signalled) {
    std::fprintf(stderr,
                 "dq4 serve: shutting down, finishing the requests in flight (a second signal "
                 "exits at once)\n");
    std::fflush(stderr);
  }
  shutdown();
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
}

void Server::shutdown() {
  if (impl_->shut_down) return;
  impl_->shut_down = true;
  impl_->http->drain();
  wait_for([&] { return impl_->service->in_flight() == 0; },
           impl_->options.shutdown_timeout_seconds);
  impl_->engine.stop(Engine::StopMode::abort);  // what is left ends with finish_reason abort
  wait_for([&] { return impl_->http->active_exchanges() == 0; }, 5);
  impl_->http->stop();
}

}  // namespace dq4
