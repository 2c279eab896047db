#pragma once
// tokenizer.json "normalizer": Sequence, Prepend, Replace (String or Regex), NFC, NFD, NFKC, NFKD.

#include <memory>
#include <string>

#include "json_node.h"

namespace dq4::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& text) const = 0;
};

// Throws dq4::Error naming the JSON path for an unsupported type or a bad field.
std::unique_ptr<Normalizer> parse_normalizer(const JsonNode& node);

}  // namespace dq4::tokenizer
