#include "choice_text.h"

#include <algorithm>

namespace dq4::engine {

namespace {

// Enough context for the decoders that look at the first token (Strip, Metaspace).
constexpr size_t kContextTokens = 8;

}  // namespace

ChoiceText::ChoiceText(const Tokenizer& tokenizer, std::span<const TokenId> prompt,
                       bool skip_special_tokens, std::vector<std::string> stop, bool include_stop)
    : decoder_(tokenizer, skip_special_tokens,
               prompt.last(std::min(prompt.size(), kContextTokens))),
      stop_(std::move(stop)),
      include_stop_(include_stop) {}

std::string ChoiceText::add(TokenId id, bool check_stop) {
  if (stop_string_) return {};
  held_ += decoder_.step(id);
  return release(check_stop, false);
}

std::string ChoiceText::finish(bool check_stop) {
  if (stop_string_) return {};
  held_ += decoder_.finish();
  return release(check_stop, true);
}

std::string ChoiceText::release(bool check_stop, bool final) {
  size_t keep = 0;  // bytes at the end of held_ that stay held
  if (check_stop) {
    // The earliest stop string wins; at one position, the longest.
    size_t best = std::string::npos;
    const std::string* match = nullptr;
    for (const std::string& s : stop_) {
      const size_t at = held_.find(s);
      if (at < best || (at == best && at != std::string::npos && s.size() > match->size())) {
        best = at;
        match = &s;
      }
    }
    if (match) {
      std::string out = held_.substr(0, best) + (include_stop_ ? *match : std::string());
      stop_string_ = *match;
      held_.clear();
      return out;
    }
    // Held text never contains a stop string, so one can only start in its last bytes.
    if (!final)
      for (const std::string& s : stop_)
        for (size_t k = std::min(s.size() - 1, held_.size()); k > keep; --k)
          if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
            keep = k;
            break;
          }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

}  // namespace dq4::engine
