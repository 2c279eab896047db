#pragma once
// The server-sent events of a streamed reply, read as they arrive, for the server tests.

#include <nlohmann/json.hpp>
#include <string>

#include "http_client.h"

namespace dq4::test {

// Reads the body of a streamed reply whose head was read, giving each event's JSON payload to
// `on_chunk` until the body ends or `on_chunk` returns false. Returns whether `data: [DONE]` came.
template <class OnChunk>
bool read_events(server::HttpClient& client, OnChunk on_chunk) {
  bool done = false;
  std::string pending;
  while (auto piece = client.read_chunk()) {
    pending += *piece;
    for (size_t end; (end = pending.find("\n\n")) != std::string::npos;) {
      const std::string event = pending.substr(0, end);
      pending.erase(0, end + 2);
      if (event == "data: [DONE]") {
        done = true;
        continue;
      }
      if (!on_chunk(nlohmann::json::parse(event.substr(6)))) return done;
    }
  }
  return done;
}

}  // namespace dq4::test
