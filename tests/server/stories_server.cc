#include "stories_server.h"

#include <gtest/gtest.h>

#include "../fixtures.h"
#include "sse_events.h"

namespace dq4::test {

std::string model_dir() { return fixtures_dir() + "/stories260K-hf"; }

std::vector<std::string> serve_args(std::vector<std::string> extra,
                                    const std::vector<std::string>& more) {
  std::vector<std::string> args = {model_dir(),
                                   "--served-model-name",
                                   "stories",
                                   "--chat-template",
                                   DQ4_SOURCE_DIR "/tests/server/chat_template.jinja",
                                   "--api-key",
                                   kKey,
                                   "--kv-cache-memory",
                                   "64MiB",
                                   "--threads",  // a loaded CI machine must not stall a pool
                                   "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

server::HttpReply post(int port, const std::string& path, const std::string& body,
                       const std::string& headers) {
  server::HttpClient client("127.0.0.1", port);
  client.send("POST", path, body, headers);
  return client.read_reply();
}

server::HttpReply get(int port, const std::string& path, const std::string& headers) {
  server::HttpClient client("127.0.0.1", port);
  client.send("GET", path, "", headers);
  return client.read_reply();
}

Streamed stream(int port, nlohmann::json body, int max_events) {
  body["stream"] = true;
  server::HttpClient client("127.0.0.1", port);
  client.send("POST", "/v1/completions", body.dump(), kAuth);
  Streamed s;
  s.status = client.read_head().status;
  s.done = read_events(client, [&](const nlohmann::json& chunk) {
    for (const nlohmann::json& c : chunk["choices"]) {
      s.text += c["text"].get<std::string>();
      if (!c["finish_reason"].is_null()) s.finish_reason = c["finish_reason"];
    }
    return ++s.events != max_events;
  });
  return s;
}

std::string complete(int port, const nlohmann::json& body) {
  const server::HttpReply r = post(port, "/v1/completions", body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  return nlohmann::json::parse(r.body)["choices"][0]["text"];
}

nlohmann::json greedy(const std::string& prompt, int max_tokens) {
  return {{"model", "stories"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

const std::vector<std::string> kPrompts = {"Once upon a time",
                                           "The little dog",
                                           "Lily and Ben went to the park",
                                           "One day, a big",
                                           "Tom had a red ball. He",
                                           "The sun was",
                                           "Mom said",
                                           "There was a girl named Sue who liked to"};

}  // namespace dq4::test
