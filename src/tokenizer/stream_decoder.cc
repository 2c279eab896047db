#include "dq4/tokenizer/stream_decoder.h"

namespace dq4 {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool is_byte_token(const std::optional<std::string>& text) {
  return text && text->size() == 6 && text->compare(0, 3, "<0x") == 0 && (*text)[5] == '>';
}

}  // namespace

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(&tokenizer), skip_special_tokens_(skip_special_tokens) {}

bool StreamDecoder::kept(TokenId id) const {
  return tokenizer_->id_to_token(id) && !(skip_special_tokens_ && tokenizer_->is_special(id));
}

std::string StreamDecoder::step(TokenId id) {
  window_.push_back(id);
  const std::string text = tokenizer_->decode(window_, skip_special_tokens_);
  if (text.size() <= prefix_.size() || text.ends_with(kReplacement) ||
      text.compare(0, prefix_.size(), prefix_) != 0)
    return {};
  // A byte-fallback token can still join the ones after it into one (maybe invalid) group.
  for (size_t i = window_.size(); i-- > 0;) {
    if (!kept(window_[i])) continue;
    if (is_byte_token(tokenizer_->id_to_token(window_[i]))) return {};
    break;
  }
  std::string out = text.substr(prefix_.size());
  prefix_ = text;
  // Move the window's start to the first id not yet returned when that is safe (see the header).
  if (read_ > 0 && kept(window_[read_])) {
    std::string rest = tokenizer_->decode(std::span(window_).subspan(read_), skip_special_tokens_);
    if (!rest.empty()) {
      window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(read_));
      prefix_ = std::move(rest);
    }
  }
  read_ = window_.size();
  return out;
}

std::string StreamDecoder::finish() {
  const std::string text = tokenizer_->decode(window_, skip_special_tokens_);
  std::string out =
      text.compare(0, prefix_.size(), prefix_) == 0 ? text.substr(prefix_.size()) : std::string();
  window_.clear();
  read_ = 0;
  prefix_.clear();
  return out;
}

}  // namespace dq4
