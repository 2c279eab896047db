#pragma once
// One completions or chat request in flight: the engine requests it became (one per prompt,
// each with n choices), their outputs gathered and written back as one JSON response or as
// server-sent events. Outputs arrive on the engine's thread and are only queued to the client
// (Exchange never blocks); a client that goes away aborts the engine requests.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "api_error.h"
#include "chat_output.h"
#include "http_exchange.h"
#include "openai_response.h"

namespace dq4::server {

struct JobShape {
  ResponseHeader header;
  bool stream = false;
  bool include_usage = false;
  int n = 1;                      // choices per prompt
  size_t prompts = 1;             // engine requests
  ChatOutputOptions chat_output;  // chat: reasoning and tool calls parsed out of the text
};

class GenerationJob : public std::enable_shared_from_this<GenerationJob> {
 public:
  // `in_flight` counts the jobs not yet answered: one more until this one is.
  GenerationJob(JobShape shape, Engine& engine, const Tokenizer& tokenizer,
                std::shared_ptr<Exchange> exchange, std::atomic<int64_t>& in_flight);

  // The callback of the engine request for prompt `prompt`.
  OutputCallback callback(size_t prompt);
  void add_request_id(uint64_t id);
  // Every request is queued: answer from here on (events that came first are replayed).
  void start();
  // A request could not be queued: abort those that were, answer `error`.
  void fail(const ApiError& error);
  // The client is gone: abort every request.
  void cancel();

 private:
  struct Choice {
    std::string text;
    std::optional<FinishReason> finish_reason;
    nlohmann::json stop_reason;
    LogprobsBuilder logprobs;
    std::unique_ptr<ChatDeltaStream> deltas;  // streamed chat with chat_output active
  };
  void on_output(size_t prompt, RequestOutput&& output);
  void process(size_t prompt, RequestOutput& output);
  std::vector<nlohmann::json> chat_deltas(Choice& c, const ChoiceDelta& delta);
  void finish();
  void send(const nlohmann::json& event);
  void abort_all();
  void mark_done();

  const JobShape shape_;
  Engine& engine_;
  std::shared_ptr<Exchange> exchange_;
  std::atomic<int64_t>& in_flight_;
  std::mutex mutex_;
  std::vector<uint64_t> request_ids_;
  std::vector<std::pair<size_t, RequestOutput>> early_;  // before start()
  std::vector<Choice> choices_;
  std::vector<Usage> usage_;
  size_t finished_ = 0;
  std::optional<std::string> error_;  // the engine's, for the answer
  bool started_ = false, failed_ = false;
  std::atomic<bool> done_{false};
};

}  // namespace dq4::server
