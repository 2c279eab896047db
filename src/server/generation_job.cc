#include "generation_job.h"

namespace dq4::server {

using nlohmann::json;

GenerationJob::GenerationJob(JobShape shape, Engine& engine, const Tokenizer& tokenizer,
                             std::shared_ptr<Exchange> exchange, std::atomic<int64_t>& in_flight)
    : shape_(std::move(shape)),
      engine_(engine),
      exchange_(std::move(exchange)),
      in_flight_(in_flight),
      usage_(shape_.prompts) {
  in_flight_++;
  choices_.reserve(shape_.prompts * shape_.n);
  for (size_t i = 0; i < shape_.prompts * size_t(shape_.n); ++i)
    choices_.push_back(
        Choice{{}, {}, nullptr, LogprobsBuilder(shape_.header.endpoint, tokenizer), nullptr});
  if (shape_.stream && shape_.chat_output.active())
    for (Choice& c : choices_) c.deltas = std::make_unique<ChatDeltaStream>(shape_.chat_output);
}

namespace {

// "tool_calls" for a choice that called tools and stopped, as OpenAI reports it.
json chat_finish_reason(const std::optional<FinishReason>& reason, bool called) {
  if (called && reason == FinishReason::stop) return "tool_calls";
  return finish_reason_json(reason);
}

}  // namespace

OutputCallback GenerationJob::callback(size_t prompt) {
  return [self = shared_from_this(), prompt](RequestOutput&& output) {
    self->on_output(prompt, std::move(output));
  };
}

void GenerationJob::add_request_id(uint64_t id) {
  std::lock_guard lock(mutex_);
  request_ids_.push_back(id);
}

void GenerationJob::start() {
  std::lock_guard lock(mutex_);
  started_ = true;
  if (shape_.stream) {
    exchange_->start_stream(200, "text/event-stream");
    if (shape_.header.endpoint == Endpoint::chat) {  // each choice opens with its role
      for (size_t i = 0; i < choices_.size(); ++i) {
        json chunk = response_object(shape_.header, true);
        chunk["choices"] = json::array({{{"index", i},
                                         {"delta", {{"role", "assistant"}, {"content", ""}}},
                                         {"logprobs", nullptr},
                                         {"finish_reason", nullptr}}});
        if (shape_.include_usage) chunk["usage"] = nullptr;
        send(chunk);
      }
    }
  }
  auto early = std::move(early_);
  for (auto& [prompt, output] : early) process(prompt, output);
}

void GenerationJob::fail(const ApiError& error) {
  {
    std::lock_guard lock(mutex_);
    failed_ = true;
  }
  abort_all();
  mark_done();
  exchange_->respond(error.response());
}

void GenerationJob::cancel() { abort_all(); }

void GenerationJob::mark_done() {
  if (!done_.exchange(true)) in_flight_--;
}

void GenerationJob::abort_all() {
  std::vector<uint64_t> ids;
  {
    std::lock_guard lock(mutex_);
    ids = request_ids_;
  }
  for (uint64_t id : ids) engine_.abort(id);
}

void GenerationJob::on_output(size_t prompt, RequestOutput&& output) {
  std::lock_guard lock(mutex_);
  if (failed_) return;
  if (!started_) {
    early_.emplace_back(prompt, std::move(output));
    return;
  }
  process(prompt, output);
}

void GenerationJob::process(size_t prompt, RequestOutput& output) {
  if (output.error && !error_) error_ = output.error;
  const bool chat = shape_.header.endpoint == Endpoint::chat;
  for (ChoiceDelta& delta : output.choices) {
    const size_t index = prompt * size_t(shape_.n) + size_t(delta.index);
    if (index >= choices_.size()) continue;
    Choice& c = choices_[index];
    for (const TokenLogprobs& t : delta.logprobs) c.logprobs.add(t);
    if (delta.finish_reason) {
      c.finish_reason = delta.finish_reason;
      c.stop_reason = stop_reason_json(delta);
    }
    if (!shape_.stream) {
      c.text += delta.text;
      continue;
    }
    if (!chat) {
      if (delta.text.empty() && !delta.finish_reason && c.logprobs.empty()) continue;
      json choice = {{"index", index}, {"text", delta.text}};
      choice["logprobs"] = c.logprobs.empty() ? json(nullptr) : c.logprobs.take();
      choice["finish_reason"] = finish_reason_json(delta.finish_reason);
      if (delta.finish_reason) choice["stop_reason"] = c.stop_reason;
      json chunk = response_object(shape_.header, true);
      chunk["choices"] = json::array({std::move(choice)});
      if (shape_.include_usage) chunk["usage"] = nullptr;
      send(chunk);
      continue;
    }
    // A chat delta may become several (reasoning, content, tool calls): the logprobs go with the
    // first, the finish reason with the last.
    std::vector<json> deltas = chat_deltas(c, delta);
    if (deltas.empty() && (delta.finish_reason || !c.logprobs.empty()))
      deltas.push_back(json::object());
    for (size_t k = 0; k < deltas.size(); ++k) {
      const bool last = k + 1 == deltas.size();
      json choice = {{"index", index}, {"delta", std::move(deltas[k])}};
      choice["logprobs"] = c.logprobs.empty() ? json(nullptr) : c.logprobs.take();
      const std::optional<FinishReason> reason = last ? delta.finish_reason : std::nullopt;
      choice["finish_reason"] = chat_finish_reason(reason, c.deltas && c.deltas->called());
      if (reason) choice["stop_reason"] = c.stop_reason;
      json chunk = response_object(shape_.header, true);
      chunk["choices"] = json::array({std::move(choice)});
      if (shape_.include_usage) chunk["usage"] = nullptr;
      send(chunk);
    }
  }
  usage_[prompt] = output.usage;
  if (output.finished && ++finished_ == shape_.prompts) finish();
}

std::vector<json> GenerationJob::chat_deltas(Choice& c, const ChoiceDelta& delta) {
  if (!c.deltas) {
    if (delta.text.empty()) return {};
    return {json{{"content", delta.text}}};
  }
  std::vector<json> deltas = c.deltas->feed(delta.text);
  if (delta.finish_reason) {
    std::vector<json> rest = c.deltas->finish();
    deltas.insert(deltas.end(), rest.begin(), rest.end());
  }
  return deltas;
}

void GenerationJob::send(const json& event) {
  if (!exchange_->send(sse_event(event))) {
    // The client is gone or too slow and the exchange closed: stop generating for it. (mutex_
    // is held here; Engine::abort may be called from an output callback.)
    for (uint64_t id : request_ids_) engine_.abort(id);
  }
}

void GenerationJob::finish() {
  Usage total;
  for (const Usage& u : usage_) {
    total.prompt_tokens += u.prompt_tokens;
    total.completion_tokens += u.completion_tokens;
    total.cached_prompt_tokens += u.cached_prompt_tokens;
  }
  mark_done();
  // The engine failed to run a step of this request: 500, or an error event ending the stream.
  const std::optional<ApiError> failure =
      error_ ? std::optional<ApiError>(ApiError(500, "generation failed: " + *error_))
             : std::nullopt;
  if (shape_.stream) {
    if (failure) send(json::parse(failure->body()));
    if (shape_.include_usage) {
      json chunk = response_object(shape_.header, true);
      chunk["choices"] = json::array();
      chunk["usage"] = usage_json(total);
      send(chunk);
    }
    exchange_->send(kSseDone);
    exchange_->end();
    return;
  }
  if (failure) return exchange_->respond(failure->response());
  const bool chat = shape_.header.endpoint == Endpoint::chat;
  json response = response_object(shape_.header, false);
  json choices = json::array();
  for (size_t i = 0; i < choices_.size(); ++i) {
    Choice& c = choices_[i];
    json choice = {{"index", i}};
    bool called = false;
    if (chat && shape_.chat_output.active())
      choice["message"] = chat_message(shape_.chat_output, c.text, called);
    else if (chat)
      choice["message"] = {{"role", "assistant"}, {"content", std::move(c.text)}};
    else
      choice["text"] = std::move(c.text);
    choice["logprobs"] = c.logprobs.empty() ? json(nullptr) : c.logprobs.take();
    choice["finish_reason"] = chat_finish_reason(c.finish_reason, called);
    choice["stop_reason"] = c.stop_reason;
    choices.push_back(std::move(choice));
  }
  response["choices"] = std::move(choices);
  response["usage"] = usage_json(total);
  exchange_->respond(HttpResponse{200, "application/json", dump(response), {}});
}

}  // namespace dq4::server
