#include "http_server.h"

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

#include "api_error.h"
#include "dq4/kernels/error.h"

namespace dq4::server {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

std::string response_head(int status, const std::string& content_type,
                          std::optional<size_t> content_length, bool chunked, bool keep_alive,
                          const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " +
                     std::string(http::obsolete_reason(static_cast<http::status>(status))) +
                     "\r\nContent-Type: " + content_type + "\r\n";
  if (content_length) head += "Content-Length: " + std::to_string(*content_length) + "\r\n";
  if (chunked) head += "Transfer-Encoding: chunked\r\n";
  head += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  for (const auto& [name, value] : headers) head += name + ": " + value + "\r\n";
  return head + "\r\n";
}

std::string chunk(const std::string& data) {
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

}  // namespace

class Connection;

struct HttpServer::Impl {
  // Declared before the io_context: connections that its destructor destroys still use them.
  HttpServerOptions options;
  HttpHandler handler;
  std::mutex mutex;
  std::list<std::weak_ptr<Connection>> connections;
  // Connections with no request in progress (under `mutex`).
  std::list<std::weak_ptr<Connection>> idle;
  std::atomic<bool> draining{false};
  std::atomic<int64_t> open_connections{0};
  std::atomic<int64_t> active_exchanges{0};
  net::io_context ioc;
  // The accept loop, its retry timer and drain's close run on one strand: drain may be called
  // twice (a signal, then stop), and two closes of one acceptor on two threads race in asio.
  net::strand<net::io_context::executor_type> accept_strand{ioc.get_executor()};
  tcp::acceptor acceptor{accept_strand};
  net::steady_timer accept_retry{accept_strand};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::vector<std::thread> threads;
  int port = 0;

  void accept();
  // Closes the connection idle the longest; false when none is idle.
  bool evict_idle();
  template <class F>
  void for_each_connection(F f);
};

namespace {

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

// RFC 9112 section 6.1: a request's transfer codings must end with one "chunked", or its body
// has no length the server can trust: answered 400, then closed (what follows cannot be framed,
// and reading it as the next request would let a proxy's idea of the body smuggle one in).
// Codings before "chunked" (gzip...) are framed but not supported: 400 too.
std::optional<ApiError> check_transfer_encoding(const http::request<http::string_body>& message) {
  if (message.count(http::field::transfer_encoding) == 0) return std::nullopt;
  std::vector<std::string> codings;
  const auto [first, last] = message.equal_range(http::field::transfer_encoding);
  for (auto field = first; field != last; ++field)
    for (const auto coding : http::token_list(field->value()))
      codings.emplace_back(coding.data(), coding.size());
  if (codings.size() == 1 && beast::iequals(codings[0], "chunked") && message.version() >= 11)
    return std::nullopt;
  return ApiError(400,
                  "malformed HTTP request: Transfer-Encoding must be chunked alone (HTTP/1.1)");
}

}  // namespace

// One client connection. Everything but the Exchange methods runs on the connection's strand.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, HttpServer::Impl* server)
      : socket_(std::move(socket)),
        server_(server),
        read_timer_(socket_.get_executor()),
        write_timer_(socket_.get_executor()) {}
  ~Connection() {
    std::lock_guard lock(server_->mutex);
    server_->connections.erase(registered_);
    if (idle_) server_->idle.erase(*idle_);
    server_->open_connections--;
  }

  void start() {
    stamp_idle_since();
    {
      std::lock_guard lock(server_->mutex);
      registered_ = server_->connections.insert(server_->connections.end(), weak_from_this());
    }
    set_idle(true);
    server_->open_connections++;
    net::dispatch(socket_.get_executor(), [self = shared_from_this()] {
      error_code ignored;
      self->socket_.set_option(tcp::no_delay(true), ignored);
      self->read_header();
    });
  }

  // Drain: idle connections close now, busy ones after their exchange.
  void drain() {
    net::dispatch(socket_.get_executor(), [self = shared_from_this()] {
      if (self->exchange_)
        self->closing_ = true;
      else
        self->close();
    });
  }
  void shut() {
    net::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->close(); });
  }
  // Makes room for a new connection: closes this one (after the response it is still writing)
  // unless a request started meanwhile (then the next idle one goes instead).
  void evict() {
    net::dispatch(socket_.get_executor(), [self = shared_from_this()] {
      if (self->closed_ || (self->exchange_ && !self->exchange_written_)) {
        self->server_->evict_idle();
        return;
      }
      if (self->exchange_)
        self->closing_ = true;  // its response is on the way: close once written
      else
        self->close();
    });
  }

  // Under server_->mutex: evict_idle() took it off the idle list.
  void left_idle_list() { idle_.reset(); }
  // When the connection was accepted or its last response queued: what "idle the longest" is
  // ordered by. Taken before the client can see the response, so a client that reads a reply
  // and then opens another connection always finds this one older.
  int64_t idle_since() const { return idle_since_.load(std::memory_order_relaxed); }

  // From the exchange (any thread): queue bytes; `last` ends the exchange once written.
  void post_write(std::string data, bool last) {
    net::post(socket_.get_executor(), [self = shared_from_this(), data = std::move(data), last] {
      self->write(std::move(data), last);
    });
  }

 private:
  class ConnectionExchange;

  struct Pending {
    HttpRequest request;
    bool keep_alive = true, http10 = false;
    std::optional<HttpResponse> error;  // a request that could not be read: answer and close
  };

  void stamp_idle_since() {
    idle_since_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                      std::memory_order_relaxed);
  }
  void set_idle(bool idle) {
    std::lock_guard lock(server_->mutex);
    if (idle && !idle_) {
      idle_ = server_->idle.insert(server_->idle.end(), weak_from_this());
    } else if (!idle && idle_) {
      server_->idle.erase(*idle_);
      idle_.reset();
    }
  }

  // Between requests: waits (at most the keep-alive timeout) for the next one to start, then
  // gives it the header timeout. Bytes read ahead during the last exchange start it at once.
  void wait_for_request() {
    if (closed_ || reading_) return;
    if (buffer_.size() != 0) return read_header();
    reading_ = true;
    arm_read_timer(server_->options.keep_alive_timeout_seconds);
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](error_code ec) {
      self->reading_ = false;
      if (self->lingering_) return self->discard_input();
      if (ec) return self->close();
      self->read_header();
    });
  }

  void read_header() {
    if (closed_ || reading_) return;
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(server_->options.max_header_bytes));
    parser_->body_limit(server_->options.max_body_bytes);
    reading_ = true;
    arm_read_timer(server_->options.header_timeout_seconds);
    http::async_read_header(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(error_code ec) {
    if (lingering_) return discard_input();
    if (ec) return on_read_error(ec);
    auto& message = parser_->get();
    if (std::optional<ApiError> bad = check_transfer_encoding(message)) {
      reading_ = false;
      return fail(*bad);
    }
    if (beast::iequals(message[http::field::expect], "100-continue")) {
      queue_.push_back("HTTP/1.1 100 Continue\r\n\r\n");
      do_write();
    }
    arm_read_timer(server_->options.header_timeout_seconds);  // now for the body
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(error_code ec) {
    reading_ = false;
    if (lingering_) return discard_input();
    if (ec) return on_read_error(ec);
    read_timer_.cancel();
    auto message = parser_->release();
    Pending next;
    next.request.method = std::string(message.method_string());
    const std::string_view target = message.target();
    next.request.path = std::string(target.substr(0, target.find('?')));
    next.request.authorization = std::string(message[http::field::authorization]);
    next.request.body = std::move(message.body());
    next.keep_alive = message.keep_alive();
    next.http10 = message.version() == 10;
    dispatch(std::move(next));
  }

  void on_read_error(error_code ec) {
    reading_ = false;
    if (lingering_) return discard_input();
    const bool http_error =
        ec.category() == http::make_error_code(http::error::body_limit).category();
    if (!http_error || ec == http::error::end_of_stream || ec == http::error::partial_message)
      return close();  // end of stream, reset, timeout: the client is gone
    if (ec == http::error::body_limit)
      return fail(ApiError(413,
                           "the request body is larger than " +
                               std::to_string(server_->options.max_body_bytes) + " bytes",
                           "", "request_too_large"));
    if (ec == http::error::header_limit) {
      // The parser fills in the target once the whole request line is read.
      if (parser_->get().target().empty() && parser_->get().method_string().empty())
        return fail(ApiError(414, "the request line is longer than " +
                                      std::to_string(server_->options.max_header_bytes) +
                                      " bytes"));
      return fail(ApiError(431, "the request headers are too large"));
    }
    fail(ApiError(400, "malformed HTTP request: " + ec.message()));
  }

  // A request that cannot be read on: answered, then the connection closes.
  void fail(const ApiError& error) {
    Pending failed;
    failed.keep_alive = false;
    failed.error = error.response();
    dispatch(std::move(failed));
  }

  // During an exchange: reads ahead what the client sends (the next request, kept for after
  // this one), so that a client closing the connection is seen at once. A client that sends
  // more than a whole request's limits ahead is held up by TCP until this exchange ends.
  void read_ahead() {
    if (closed_ || reading_ || lingering_) return;
    const size_t limit = server_->options.max_header_bytes + server_->options.max_body_bytes;
    if (buffer_.size() >= limit) return;
    reading_ = true;
    const size_t chunk = std::min<size_t>(16384, limit - buffer_.size());
    socket_.async_read_some(buffer_.prepare(chunk),
                            [self = shared_from_this()](error_code ec, size_t n) {
                              self->reading_ = false;
                              if (self->lingering_) return self->discard_input();
                              if (ec == net::error::operation_aborted && !self->closed_)
                                return self->continue_reading();  // the exchange ended
                              if (ec) return self->close();       // end of stream, reset: gone
                              self->buffer_.commit(n);
                              self->continue_reading();
                            });
  }
  void continue_reading() {
    if (exchange_)
      read_ahead();
    else
      wait_for_request();
  }

  // Closing after a response: the write side first, then what the client still sends is read
  // and dropped for a moment, so that closing with unread data (which resets the connection)
  // cannot destroy the response before the client reads it (e.g. a 413 to a large upload).
  void linger() {
    lingering_ = true;
    set_idle(false);
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    read_timer_.expires_after(std::chrono::seconds(2));
    read_timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) self->close();
    });
    if (reading_)
      socket_.cancel(ignored);  // its handler discards
    else
      discard_input();
  }
  void discard_input() {
    reading_ = false;
    if (closed_) return;
    scratch_.resize(16384);
    socket_.async_read_some(net::buffer(scratch_),
                            [self = shared_from_this()](error_code ec, size_t n) {
                              self->discarded_ += n;
                              if (ec || self->discarded_ > (64u << 20)) return self->close();
                              self->discard_input();
                            });
  }

  void dispatch(Pending next);
  void write(std::string data, bool last);
  void do_write();
  void finish_exchange();
  void close();

  // Closes the connection after `timeout` unless an exchange is in progress by then.
  void arm_read_timer(double timeout) {
    read_timer_.expires_after(seconds(timeout));
    read_timer_.async_wait([weak = weak_from_this()](error_code ec) {
      if (ec) return;
      if (auto self = weak.lock(); self && !self->exchange_) self->close();
    });
  }

  tcp::socket socket_;
  HttpServer::Impl* server_;
  std::list<std::weak_ptr<Connection>>::iterator registered_;
  std::optional<std::list<std::weak_ptr<Connection>>::iterator> idle_;  // under server_->mutex
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  net::steady_timer read_timer_, write_timer_;
  bool reading_ = false, writing_ = false, closed_ = false;
  bool closing_ = false;  // close once the current exchange is written
  bool lingering_ = false;
  std::vector<char> scratch_;
  size_t discarded_ = 0;
  std::shared_ptr<ConnectionExchange> exchange_;
  bool exchange_written_ = false;  // its last bytes are queued
  std::atomic<int64_t> idle_since_{0};
  std::shared_ptr<Connection> self_;  // kept alive while an exchange is in progress
  std::deque<std::string> queue_;
  std::vector<std::string> in_flight_;
};

class Connection::ConnectionExchange : public Exchange {
 public:
  ConnectionExchange(std::weak_ptr<Connection> connection, bool keep_alive, bool http10,
                     size_t limit)
      : connection_(std::move(connection)),
        keep_alive_(keep_alive),
        http10_(http10),
        limit_(limit) {}

  void respond(HttpResponse r) override {
    if (ended_.exchange(true)) return;
    std::string data =
        response_head(r.status, r.content_type, r.body.size(), false, keep_alive_, r.headers) +
        r.body;
    queue(std::move(data), true);
  }
  void start_stream(int status, const std::string& content_type) override {
    streaming_ = true;
    queue(response_head(status, content_type, std::nullopt, !http10_, keep_alive_ && !http10_,
                        {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}}),
          false);
  }
  bool send(std::string data) override {
    if (gone_ || ended_) return false;
    std::string framed = http10_ ? std::move(data) : chunk(data);
    if (queued_.load() + framed.size() > limit_) {
      gone_ = true;  // too far behind: drop the client rather than buffer without bound
      if (auto c = connection_.lock()) c->shut();
      return false;
    }
    return queue(std::move(framed), false);
  }
  void end() override {
    if (ended_.exchange(true)) return;
    queue(http10_ ? std::string() : std::string("0\r\n\r\n"), true);
  }
  void on_disconnect(std::function<void()> callback) override {
    std::unique_lock lock(mutex_);
    if (!disconnected_) {
      on_disconnect_ = std::move(callback);
      return;
    }
    lock.unlock();
    if (!ended_) callback();
  }

  // On the strand.
  void client_gone() {
    gone_ = true;
    std::function<void()> callback;
    {
      std::lock_guard lock(mutex_);
      disconnected_ = true;
      callback = std::move(on_disconnect_);
    }
    if (callback && !ended_) callback();
  }
  void written(size_t bytes) {  // saturating: a 100 Continue written meanwhile is not counted
    size_t now = queued_.load();
    while (!queued_.compare_exchange_weak(now, now > bytes ? now - bytes : 0)) {
    }
  }
  bool keep_alive() const { return keep_alive_ && !(streaming_ && http10_); }

 private:
  bool queue(std::string data, bool last) {
    auto c = connection_.lock();
    if (!c) return false;
    queued_ += data.size();
    c->post_write(std::move(data), last);
    return true;
  }

  std::weak_ptr<Connection> connection_;
  const bool keep_alive_, http10_;
  const size_t limit_;
  std::atomic<bool> ended_{false}, gone_{false}, streaming_{false};
  std::atomic<size_t> queued_{0};
  std::mutex mutex_;
  bool disconnected_ = false;
  std::function<void()> on_disconnect_;
};

void Connection::dispatch(Pending next) {
  // A read that completed just before close() (a shutdown, a full server) still calls back:
  // an exchange started now could never be written, and would keep the connection alive.
  if (closed_) return;
  const bool draining = server_->draining.load();
  const bool keep_alive = next.keep_alive && !closing_ && !draining;
  exchange_ = std::make_shared<ConnectionExchange>(weak_from_this(), keep_alive, next.http10,
                                                   server_->options.max_queued_bytes);
  exchange_written_ = false;
  self_ = shared_from_this();
  server_->active_exchanges++;
  set_idle(false);
  if (!next.error) read_ahead();  // notices a client that goes away
  auto exchange = exchange_;
  if (next.error) return exchange->respond(std::move(*next.error));
  if (draining) {
    return exchange->respond(
        ApiError(503, "the server is shutting down").retry_after(1).response());
  }
  try {
    server_->handler(std::move(next.request), exchange);
  } catch (const std::exception& e) {
    exchange->respond(ApiError(500, std::string("internal error: ") + e.what()).response());
  }
}

void Connection::write(std::string data, bool last) {
  if (closed_) return;
  if (!data.empty()) queue_.push_back(std::move(data));
  if (last) {
    // Idle from here: the client may read the response before the write completes.
    exchange_written_ = true;
    stamp_idle_since();
    if (!closing_ && exchange_ && exchange_->keep_alive()) set_idle(true);
  }
  do_write();
}

void Connection::do_write() {
  if (writing_ || closed_) return;
  if (queue_.empty()) {
    if (exchange_ && exchange_written_) finish_exchange();
    return;
  }
  writing_ = true;
  in_flight_.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
  queue_.clear();
  std::vector<net::const_buffer> buffers;
  for (const std::string& s : in_flight_) buffers.push_back(net::buffer(s));
  write_timer_.expires_after(seconds(server_->options.write_timeout_seconds));
  write_timer_.async_wait([weak = weak_from_this()](error_code ec) {
    if (ec) return;
    if (auto self = weak.lock()) self->close();  // a stalled client
  });
  net::async_write(socket_, buffers, [self = shared_from_this()](error_code ec, size_t n) {
    self->writing_ = false;
    self->write_timer_.cancel();
    self->in_flight_.clear();
    if (self->exchange_) self->exchange_->written(n);
    if (ec) return self->close();
    self->do_write();
  });
}

void Connection::finish_exchange() {
  auto keep = shared_from_this();
  const bool keep_alive = exchange_->keep_alive() && !closing_ && !server_->draining;
  exchange_.reset();
  self_.reset();
  server_->active_exchanges--;
  if (!keep_alive) return linger();
  set_idle(true);
  if (reading_) {  // reading ahead: stop, and parse what came first
    error_code ignored;
    socket_.cancel(ignored);
    return;
  }
  wait_for_request();
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  set_idle(false);
  error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  read_timer_.cancel();
  write_timer_.cancel();
  queue_.clear();
  if (exchange_) {
    auto exchange = std::move(exchange_);
    server_->active_exchanges--;
    exchange->client_gone();
  }
  self_.reset();
}

template <class F>
void HttpServer::Impl::for_each_connection(F f) {
  std::vector<std::shared_ptr<Connection>> live;
  {
    std::lock_guard lock(mutex);
    for (auto& weak : connections)
      if (auto c = weak.lock()) live.push_back(std::move(c));
  }
  for (auto& c : live) f(*c);
}

void HttpServer::Impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
    if (!acceptor.is_open() || ec == net::error::operation_aborted) return;
    if (ec) {  // e.g. out of file descriptors: try again shortly instead of spinning
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](error_code e) {
        if (!e) accept();
      });
      return;
    }
    if (open_connections.load() >= options.max_connections && !evict_idle()) {
      error_code ignored;
      socket.close(ignored);  // every connection is busy
    } else {
      std::make_shared<Connection>(std::move(socket), this)->start();
    }
    accept();
  });
}

bool HttpServer::Impl::evict_idle() {
  std::shared_ptr<Connection> oldest;
  {
    std::lock_guard lock(mutex);
    auto chosen = idle.end();
    for (auto it = idle.begin(); it != idle.end(); ++it) {
      auto c = it->lock();  // (an expired one is being destroyed: it removes itself)
      if (c && (!oldest || c->idle_since() < oldest->idle_since())) {
        oldest = std::move(c);
        chosen = it;
      }
    }
    if (!oldest) return false;
    oldest->left_idle_list();
    idle.erase(chosen);
  }
  oldest->evict();
  return true;
}

HttpServer::HttpServer(const HttpServerOptions& options, HttpHandler handler)
    : HttpServer(Listener(options.host, options.port), options, std::move(handler)) {}

HttpServer::HttpServer(Listener listener, const HttpServerOptions& options, HttpHandler handler)
    : impl_(std::make_shared<Impl>()) {
  impl_->options = options;
  impl_->handler = std::move(handler);
  impl_->port = listener.port();
  impl_->acceptor.assign(listener.ipv6() ? tcp::v6() : tcp::v4(), listener.release());
  impl_->work.emplace(impl_->ioc.get_executor());
  impl_->accept();
  for (int i = 0; i < std::max(1, options.threads); ++i)
    impl_->threads.emplace_back([impl = impl_.get()] { impl->ioc.run(); });
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::port() const { return impl_->port; }
int64_t HttpServer::open_connections() const { return impl_->open_connections; }
int64_t HttpServer::active_exchanges() const { return impl_->active_exchanges; }

void HttpServer::drain() {
  impl_->draining = true;
  net::post(impl_->acceptor.get_executor(), [impl = impl_.get()] {
    error_code ignored;
    impl->acceptor.close(ignored);
    impl->accept_retry.cancel();
  });
  impl_->for_each_connection([](Connection& c) { c.drain(); });
}

void HttpServer::stop() {
  if (impl_->threads.empty()) return;
  drain();
  impl_->for_each_connection([](Connection& c) { c.shut(); });
  impl_->work.reset();  // the threads return once every connection is gone
  for (std::thread& t : impl_->threads) t.join();
  impl_->threads.clear();
}

}  // namespace dq4::server
