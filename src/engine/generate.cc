// generate(): one sequence's sampling loop with streamed text and stop conditions.

#include <algorithm>
#include <chrono>

#include "dq4/engine/session.h"
#include "dq4/tokenizer/stream_decoder.h"

namespace dq4 {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The length of the longest suffix of `text` that starts some stop string (it may still become
// one, so it is not shown yet).
size_t held_back(std::string_view text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const std::string& s : stops)
    for (size_t n = std::min(s.size() - 1, text.size()); n > hold; --n)
      if (text.substr(text.size() - n) == std::string_view(s).substr(0, n)) {
        hold = n;
        break;
      }
  return hold;
}

}  // namespace

GenerationResult generate(Session& session, const Tokenizer& tokenizer,
                          std::span<const int32_t> prompt, const SamplingParams& sampling,
                          const StopConditions& stop,
                          const std::function<void(std::string_view)>& on_text) {
  GenerationResult result;
  result.prompt_ids.assign(prompt.begin(), prompt.end());
  // Reuse the cached prefix, but always compute the last prompt token: its logits are needed.
  const std::vector<int32_t>& cached = session.tokens();
  size_t keep = 0;
  while (keep < cached.size() && keep + 1 < prompt.size() && cached[keep] == prompt[keep]) ++keep;
  session.truncate(static_cast<int64_t>(keep));
  result.prompt_tokens_computed = static_cast<int64_t>(prompt.size() - keep);

  const auto start = std::chrono::steady_clock::now();
  std::span<const float> logits = session.feed(prompt.subspan(keep));
  Sampler sampler(sampling);
  StreamDecoder decoder(tokenizer, /*skip_special_tokens=*/true);
  std::vector<float> row;
  size_t emitted = 0;
  const auto emit = [&](size_t upto) {
    if (upto > emitted && on_text)
      on_text(std::string_view(result.text).substr(emitted, upto - emitted));
    emitted = std::max(emitted, upto);
  };
  std::chrono::steady_clock::time_point first_token{};
  bool stopped_by_string = false;
  for (;;) {
    row.assign(logits.begin(), logits.end());
    const int32_t id = sampler.sample(row, prompt, result.generated_ids);
    if (result.generated_ids.empty()) {
      result.prompt_seconds = seconds_since(start);
      first_token = std::chrono::steady_clock::now();
    }
    if (std::find(stop.stop_ids.begin(), stop.stop_ids.end(), id) != stop.stop_ids.end()) {
      result.finish_reason = "stop";
      break;
    }
    result.generated_ids.push_back(id);
    result.text += decoder.step(id);
    // A stop string ends the text where it begins; search only where a new one can be.
    size_t cut = std::string::npos;
    for (const std::string& s : stop.stop_strings) {
      const size_t from = emitted > s.size() ? emitted - s.size() : 0;
      cut = std::min(cut, result.text.find(s, from));
    }
    if (cut != std::string::npos) {
      result.text.resize(cut);
      result.finish_reason = "stop";
      stopped_by_string = true;
      break;
    }
    emit(result.text.size() - held_back(result.text, stop.stop_strings));
    if (static_cast<int64_t>(result.generated_ids.size()) >= stop.max_tokens ||
        static_cast<int64_t>(session.tokens().size()) >= session.context()) {
      result.finish_reason = "length";
      break;
    }
    const int32_t next[] = {id};
    logits = session.feed(next);
  }
  if (!stopped_by_string) result.text += decoder.finish();
  emit(result.text.size());
  if (!result.generated_ids.empty()) result.decode_seconds = seconds_since(first_token);
  return result;
}

}  // namespace dq4
