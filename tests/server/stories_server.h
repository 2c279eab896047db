#pragma once
// The server the end-to-end serve tests start: `dq4 serve` on the stories260K fixture behind an
// API key, and the requests they send it.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http_client.h"

namespace dq4::test {

inline const std::string kKey = "test-key";
inline const std::string kAuth = "Authorization: Bearer " + kKey + "\r\n";

std::string model_dir();

// The arguments of `dq4 serve` on stories260K (served as "stories"), then `extra` and `more`.
std::vector<std::string> serve_args(std::vector<std::string> extra = {},
                                    const std::vector<std::string>& more = {});

server::HttpReply post(int port, const std::string& path, const std::string& body,
                       const std::string& headers = kAuth);
server::HttpReply get(int port, const std::string& path, const std::string& headers = kAuth);

struct Streamed {
  int status = 0;
  std::string text, finish_reason;
  bool done = false;  // data: [DONE] came
  int events = 0;
};

// Streams a completions request; stops reading after `max_events` events when given (the
// connection is then closed: a client going away).
Streamed stream(int port, nlohmann::json body, int max_events = -1);

// The text of a completions request that must succeed.
std::string complete(int port, const nlohmann::json& body);

// A greedy completions request for the "stories" model.
nlohmann::json greedy(const std::string& prompt, int max_tokens);

// Story openings for requests that should differ.
extern const std::vector<std::string> kPrompts;

}  // namespace dq4::test
