#pragma once
// tokenizer.json "pre_tokenizer": ByteLevel, Split, Metaspace, Digits and Sequence.

#include <memory>
#include <vector>

#include "json_node.h"
#include "split.h"

namespace dq4::tokenizer {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` by their pre-tokens, in order.
  virtual void pre_tokenize(std::vector<Piece>& pieces) const = 0;
};

// Throws dq4::Error naming the JSON path for an unsupported type or a bad field.
std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const JsonNode& node);

}  // namespace dq4::tokenizer
