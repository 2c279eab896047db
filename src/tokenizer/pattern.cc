#include "pattern.h"

namespace dq4::tokenizer {

Pattern::Pattern(const JsonNode& node) {
  if (!node.value().is_object() || node.value().size() != 1)
    node.fail("expected {\"String\": ...} or {\"Regex\": ...}");
  if (node.has("String")) {
    literal_ = node.get_string("String");
  } else if (node.has("Regex")) {
    const JsonNode regex = node.at("Regex");
    regex_ = std::make_unique<Regex>(regex.as_string(), regex.where());
  } else {
    node.fail("expected {\"String\": ...} or {\"Regex\": ...}");
  }
}

Matches Pattern::find_all(std::string_view text) const {
  return regex_ ? regex_->find_all(text) : find_literal(text, literal_);
}

std::string Pattern::replace_all(std::string_view text, std::string_view content) const {
  if (!regex_) return replace_literal(text, literal_, content);
  std::string out;
  out.reserve(text.size());
  size_t previous = 0;
  for (const auto& [begin, end] : regex_->find_all(text)) {
    out.append(text.substr(previous, begin - previous));
    out.append(content);
    previous = end;
  }
  out.append(text.substr(previous));
  return out;
}

}  // namespace dq4::tokenizer
