#pragma once
// The {"String": ...} / {"Regex": ...} patterns of Split, Replace and the Replace decoder.

#include <memory>
#include <string>
#include <string_view>

#include "json_node.h"
#include "regex.h"
#include "split.h"

namespace dq4::tokenizer {

class Pattern {
 public:
  explicit Pattern(const JsonNode& node);
  Matches find_all(std::string_view text) const;
  // `text` with every match replaced by `content`.
  std::string replace_all(std::string_view text, std::string_view content) const;

 private:
  std::string literal_;
  std::unique_ptr<Regex> regex_;  // null for a String pattern
};

}  // namespace dq4::tokenizer
