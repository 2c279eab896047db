#include "dq4/engine/offline_engine.h"

#include <chrono>
#include <exception>

namespace dq4 {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_from(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

OfflineEngine::OfflineEngine(Model& model, const Tokenizer& tokenizer, const EngineOptions& options,
                             ThreadPool* pool)
    : engine_(model, tokenizer, options, pool) {}

OfflineEngine::OfflineEngine(std::unique_ptr<EngineModel> model, const Tokenizer& tokenizer,
                             const EngineOptions& options)
    : engine_(std::move(model), tokenizer, options) {}

GenerationOutput OfflineEngine::generate(Request request, const DeltaCallback& on_delta) {
  if (request.n != 1)
    throw Error("offline engine: one choice per request, not n = " + std::to_string(request.n));
  GenerationOutput result;
  result.prompt_ids = request.prompt;
  std::optional<std::string> error;
  std::exception_ptr callback_error;
  uint64_t id = 0;
  const Clock::time_point start = Clock::now();
  Clock::time_point first_token;
  const auto collect = [&](RequestOutput&& out) {
    for (const ChoiceDelta& d : out.choices) {
      if (!d.token_ids.empty() && result.token_ids.empty()) {
        first_token = Clock::now();
        result.prompt_seconds = seconds_from(start, first_token);
      }
      result.token_ids.insert(result.token_ids.end(), d.token_ids.begin(), d.token_ids.end());
      result.logprobs.insert(result.logprobs.end(), d.logprobs.begin(), d.logprobs.end());
      result.text += d.text;
      if (d.finish_reason) result.finish_reason = *d.finish_reason;
      if (d.stop_string) result.stop_string = d.stop_string;
      if (d.stop_token) result.stop_token = d.stop_token;
      if (on_delta && !callback_error) {
        try {
          on_delta(d);
        } catch (...) {
          callback_error = std::current_exception();
          engine_.abort(id);
        }
      }
    }
    result.cached_prompt_tokens = out.usage.cached_prompt_tokens;
    if (out.error) error = out.error;
    if (out.finished && !result.token_ids.empty())
      result.decode_seconds = seconds_from(first_token, Clock::now());
  };
  id = engine_.add_request(std::move(request), collect);
  while (engine_.has_unfinished()) engine_.step();
  if (callback_error) std::rethrow_exception(callback_error);
  if (error) throw Error(*error);
  return result;
}

}  // namespace dq4
