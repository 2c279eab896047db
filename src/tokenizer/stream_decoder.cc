#include "dq4/tokenizer/stream_decoder.h"

namespace dq4 {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool is_byte_token(const std::optional<std::string>& text) {
  return text && text->size() == 6 && text->compare(0, 3, "<0x") == 0 && (*text)[5] == '>';
}

}  // namespace

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens,
                             std::span<const TokenId> context)
    : tokenizer_(&tokenizer),
      skip_special_tokens_(skip_special_tokens),
      window_(context.begin(), context.end()) {
  // Returned so far: the context up to where later ids cannot change its text, i.e. before a
  // trailing run of byte-fallback tokens (a later byte can join their group, and an invalid
  // group decodes to U+FFFD throughout) and before an incomplete character.
  read_ = window_.size();
  for (size_t i = window_.size(); i-- > 0;) {
    if (!kept(window_[i])) continue;
    if (!is_byte_token(tokenizer_->id_to_token(window_[i]))) break;
    read_ = i;
  }
  for (;; --read_) {
    prefix_ = tokenizer_->decode(std::span(window_).first(read_), skip_special_tokens_);
    if (read_ == 0 || !prefix_.ends_with(kReplacement)) break;
  }
  // The rest of the context's text is skipped when what follows leaves it as it is.
  if (read_ < window_.size()) context_text_ = tokenizer_->decode(window_, skip_special_tokens_);
}

std::string StreamDecoder::new_text(const std::string& text) {
  std::string out = text.substr(prefix_.size());
  if (!context_text_.empty() && text.starts_with(context_text_))
    out = text.substr(context_text_.size());
  context_text_.clear();
  return out;
}

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
  std::string out = new_text(text);
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
  std::string out = text.compare(0, prefix_.size(), prefix_) == 0 ? new_text(text) : std::string();
  window_.clear();
  read_ = 0;
  prefix_.clear();
  return out;
}

}  // namespace dq4
