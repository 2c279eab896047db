#pragma once
// tokenizer.json "decoder": ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, Sequence.
// Each works on the list of token strings as Hugging Face's decode_chain; decode() joins the
// final list.

#include <memory>
#include <string>
#include <vector>

#include "json_node.h"

namespace dq4::tokenizer {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  // One token's own bytes in the middle of a text: the per-token steps of decode_chain without
  // what it does to a whole text (UTF-8 repair, stripping the text's ends, joining).
  virtual void token_bytes(std::string& token) const = 0;
};

// Throws dq4::Error naming the JSON path for an unsupported type or a bad field.
std::unique_ptr<Decoder> parse_decoder(const JsonNode& node);

}  // namespace dq4::tokenizer
