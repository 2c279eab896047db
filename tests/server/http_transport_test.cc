// The HTTP transport alone, over real loopback sockets: keep-alive and pipelining, limits and
// malformed requests, chunked streaming, clients that disconnect or stop reading, hundreds of
// concurrent streams, draining.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dq4/kernels/error.h"
#include "eventually.h"
#include "http_client.h"
#include "http_server.h"

namespace dq4::server {
namespace {

using namespace std::chrono_literals;
using test::eventually;

class HttpTransport : public ::testing::Test {
 protected:
  void start(HttpServerOptions options = {}) {
    options.port = 0;
    server_ = std::make_unique<HttpServer>(
        options,
        [this](HttpRequest r, std::shared_ptr<Exchange> e) { handle(std::move(r), std::move(e)); });
  }
  void TearDown() override {
    {
      std::lock_guard lock(mutex_);
      for (auto& e : held_) e->end();
    }
    for (std::thread& t : producers_) t.join();
    server_.reset();
  }

  // /echo answers its method, path and body; /stream/N streams N events from another thread;
  // /hold starts a stream and keeps the exchange for the test; /wait keeps it unanswered.
  void handle(HttpRequest r, std::shared_ptr<Exchange> e) {
    if (r.path == "/echo")
      return e->respond(
          HttpResponse{200, "text/plain", r.method + " " + r.path + " " + r.body, {}});
    if (r.path.rfind("/stream/", 0) == 0) {
      const int n = std::stoi(r.path.substr(8));
      e->start_stream(200, "text/event-stream");
      std::lock_guard lock(mutex_);
      producers_.emplace_back([e, n] {
        for (int i = 0; i < n; ++i) e->send("data: " + std::to_string(i) + "\n\n");
        e->end();
      });
      return;
    }
    if (r.path == "/hold" || r.path == "/wait") {
      if (r.path == "/hold") e->start_stream(200, "text/event-stream");
      e->on_disconnect([this] { disconnects_++; });
      std::lock_guard lock(mutex_);
      held_.push_back(std::move(e));
      return;
    }
    e->respond(HttpResponse{404, "text/plain", "no", {}});
  }

  std::shared_ptr<Exchange> held(size_t i) {
    std::lock_guard lock(mutex_);
    return i < held_.size() ? held_[i] : nullptr;
  }

  std::unique_ptr<HttpServer> server_;
  std::mutex mutex_;
  std::vector<std::thread> producers_;
  std::vector<std::shared_ptr<Exchange>> held_;
  std::atomic<int> disconnects_{0};
};

std::string body_of_stream(HttpClient& client) {
  std::string body;
  while (auto piece = client.read_chunk()) body += *piece;
  return body;
}

TEST_F(HttpTransport, KeepAliveAndPipelining) {
  start();
  HttpClient client("127.0.0.1", server_->port());
  client.send_raw(
      "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n"
      "POST /echo?q=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
  HttpReply first = client.read_reply();
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.body, "GET /echo ");
  HttpReply second = client.read_reply();
  EXPECT_EQ(second.body, "POST /echo abc");
  EXPECT_EQ(second.headers["connection"], "keep-alive");
  client.send("GET", "/nothing");
  EXPECT_EQ(client.read_reply().status, 404);
}

// A request pipelined behind one answered later waits its turn; and a client that pipelines and
// then leaves is still seen leaving while the first request is unanswered.
TEST_F(HttpTransport, PipelinedRequestsWaitTheirTurnAndDoNotHideAClose) {
  start();
  {
    HttpClient client("127.0.0.1", server_->port());
    client.send_raw(
        "GET /wait HTTP/1.1\r\nHost: x\r\n\r\n"
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyz");
    ASSERT_TRUE(eventually([&] { return held(0) != nullptr; }));
    held(0)->respond(HttpResponse{200, "text/plain", "late", {}});
    EXPECT_EQ(client.read_reply().body, "late");
    EXPECT_EQ(client.read_reply().body, "POST /echo xyz");
  }
  {
    HttpClient client("127.0.0.1", server_->port());
    client.send_raw(
        "GET /wait HTTP/1.1\r\nHost: x\r\n\r\n"
        "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(eventually([&] { return held(1) != nullptr; }));
  }  // closed, the first request unanswered
  EXPECT_TRUE(eventually([&] { return disconnects_ == 1; }));
  EXPECT_TRUE(eventually([&] { return server_->open_connections() == 0; }));
}

// At the connection cap with every connection busy, a new connection is refused (an idle one
// making room is ServeHardening.IdleConnectionsAtTheCapMakeRoomForANewRequest's case).
TEST_F(HttpTransport, ConnectionCapRefusesOnlyWhenEveryConnectionIsBusy) {
  HttpServerOptions options;
  options.max_connections = 2;
  start(options);
  HttpClient first("127.0.0.1", server_->port()), second("127.0.0.1", server_->port());
  // One after the other, so that held(0) is the first client's request.
  first.send("GET", "/wait");
  ASSERT_TRUE(eventually([&] { return held(0) != nullptr; }));
  second.send("GET", "/wait");
  ASSERT_TRUE(eventually([&] { return held(1) != nullptr; }));
  EXPECT_THROW(
      {
        HttpClient refused("127.0.0.1", server_->port());
        refused.send("GET", "/echo");
        refused.read_reply();
      },
      Error);
  held(0)->respond(HttpResponse{200, "text/plain", "done", {}});
  EXPECT_EQ(first.read_reply().body, "done");
}

TEST_F(HttpTransport, LimitsAndMalformedRequests) {
  HttpServerOptions options;
  options.max_body_bytes = 1000;
  options.max_header_bytes = 2000;
  start(options);
  {
    HttpClient client("127.0.0.1", server_->port());
    client.send("POST", "/echo", std::string(8 << 20, 'x'));  // answered 413 whole, not reset
    const HttpReply r = client.read_reply();
    EXPECT_EQ(r.status, 413);
    EXPECT_NE(r.body.find("\"code\":\"request_too_large\""), std::string::npos) << r.body;
    EXPECT_EQ(r.headers.at("connection"), "close");
  }
  {
    HttpClient client("127.0.0.1", server_->port());
    client.send("GET", "/echo", "", "X-Big: " + std::string(3000, 'y') + "\r\n");
    EXPECT_EQ(client.read_reply().status, 431);
  }
  {
    HttpClient client("127.0.0.1", server_->port());
    client.send("GET", "/" + std::string(1 << 20, 'p'));
    const HttpReply r = client.read_reply();
    EXPECT_EQ(r.status, 414);
    EXPECT_NE(r.body.find("request line"), std::string::npos) << r.body;
  }
  for (const char* garbage : {"\x01\x02\x03 nonsense\r\n\r\n", "GET /echo HTTP/9.9\r\n\r\n",
                              "POST /echo HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
                              "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}) {
    HttpClient client("127.0.0.1", server_->port());
    client.send_raw(garbage);
    const HttpReply r = client.read_reply();
    EXPECT_EQ(r.status, 400) << garbage;
    EXPECT_NE(r.body.find("\"error\""), std::string::npos);
  }
  // HTTP/1.0: answered, then closed.
  HttpClient old("127.0.0.1", server_->port());
  old.send_raw("GET /echo HTTP/1.0\r\n\r\n");
  EXPECT_EQ(old.read_reply().body, "GET /echo ");
  // Still serving.
  HttpClient client("127.0.0.1", server_->port());
  client.send("GET", "/echo");
  EXPECT_EQ(client.read_reply().status, 200);
}

TEST_F(HttpTransport, StreamsChunksThenKeepsTheConnection) {
  start();
  HttpClient client("127.0.0.1", server_->port());
  client.send("POST", "/stream/200");
  const HttpReply head = client.read_head();
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.headers.at("content-type"), "text/event-stream");
  EXPECT_EQ(head.headers.at("transfer-encoding"), "chunked");
  std::string expected;
  for (int i = 0; i < 200; ++i) expected += "data: " + std::to_string(i) + "\n\n";
  EXPECT_EQ(body_of_stream(client), expected);
  client.send("GET", "/echo");
  EXPECT_EQ(client.read_reply().body, "GET /echo ");
}

TEST_F(HttpTransport, ClientGoingAwayMidStreamIsNoticedAtOnce) {
  start();
  {
    HttpClient client("127.0.0.1", server_->port());
    client.send("POST", "/hold");
    EXPECT_EQ(client.read_head().status, 200);
    ASSERT_TRUE(held(0)->send("data: 1\n\n"));
    EXPECT_EQ(client.read_chunk(), "data: 1\n\n");
  }  // closed
  EXPECT_TRUE(eventually([&] { return disconnects_ == 1; }));
  EXPECT_FALSE(held(0)->send("data: 2\n\n"));
  EXPECT_TRUE(eventually([&] { return server_->open_connections() == 0; }));
}

TEST_F(HttpTransport, ClientThatStopsReadingIsDroppedNotBuffered) {
  HttpServerOptions options;
  options.max_queued_bytes = 256 << 10;
  start(options);
  HttpClient slow("127.0.0.1", server_->port());
  slow.send("POST", "/hold");
  ASSERT_TRUE(eventually([&] { return held(0) != nullptr; }));
  const std::string piece(64 << 10, 'z');
  int sent = 0;
  while (sent < 10000 && held(0)->send(piece)) ++sent;  // the kernel buffers some, then we stop
  EXPECT_LT(sent, 10000);
  EXPECT_TRUE(eventually([&] { return disconnects_ == 1; }));
  HttpClient other("127.0.0.1", server_->port());
  other.send("GET", "/echo");
  EXPECT_EQ(other.read_reply().status, 200);
}

TEST_F(HttpTransport, HoldsHundredsOfConcurrentStreams) {
  start();
  constexpr int kClients = 256, kEvents = 20;
  std::string expected;
  for (int i = 0; i < kEvents; ++i) expected += "data: " + std::to_string(i) + "\n\n";
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<HttpClient>("127.0.0.1", server_->port()));
    clients.back()->send("POST", "/stream/" + std::to_string(kEvents));
  }
  std::atomic<int> complete{0};
  std::vector<std::thread> readers;
  for (auto& c : clients)
    readers.emplace_back([&, client = c.get()] {
      if (client->read_head().status == 200 && body_of_stream(*client) == expected) complete++;
    });
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(complete, kClients);
  EXPECT_EQ(server_->open_connections(), kClients);
}

TEST_F(HttpTransport, DrainFinishesExchangesAndRefusesNewWork) {
  start();
  HttpClient busy("127.0.0.1", server_->port());
  busy.send("POST", "/hold");
  EXPECT_EQ(busy.read_head().status, 200);
  HttpClient idle("127.0.0.1", server_->port());
  idle.send("GET", "/echo");
  EXPECT_EQ(idle.read_reply().status, 200);
  server_->drain();
  EXPECT_TRUE(eventually([&] { return server_->open_connections() == 1; }));  // idle one closed
  EXPECT_THROW(
      {
        HttpClient late("127.0.0.1", server_->port());
        late.send("GET", "/echo");
        late.read_reply();
      },
      Error);
  ASSERT_TRUE(held(0)->send("data: last\n\n"));
  held(0)->end();
  EXPECT_EQ(body_of_stream(busy), "data: last\n\n");
  EXPECT_TRUE(eventually([&] { return server_->open_connections() == 0; }));
}

// A signal drains the server and its owner's stop() drains it again, on other threads, while
// clients connect: the acceptor's close must not run beside another close or the accept loop
// (asio's reactor state for one socket is not thread-safe).
TEST_F(HttpTransport, DrainsFromSeveralThreadsAtOnceWhileClientsConnect) {
  HttpServerOptions options;
  options.threads = 4;
  for (int i = 0; i < 100; ++i) {
    start(options);
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, port = server_->port()] {
        while (!go) std::this_thread::yield();
        try {
          HttpClient client("127.0.0.1", port);  // may be refused once the drain closed it
        } catch (const Error&) {
        }
        server_->drain();
      });
    go = true;
    for (std::thread& t : threads) t.join();
    server_.reset();
  }
}

}  // namespace
}  // namespace dq4::server
