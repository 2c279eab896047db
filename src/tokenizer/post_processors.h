#pragma once
// tokenizer.json "post_processor" for one sequence: TemplateProcessing, ByteLevel (ids
// unchanged), RobertaProcessing, BertProcessing and Sequence. Applied only when special tokens are
// asked for (encode(text, add_special_tokens=true)).

#include <memory>
#include <vector>

#include "dq4/tokenizer/tokenizer.h"
#include "json_node.h"

namespace dq4::tokenizer {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void add_special_tokens(std::vector<TokenId>& ids) const = 0;
};

// Throws dq4::Error naming the JSON path for an unsupported type or a bad field.
std::unique_ptr<PostProcessor> parse_post_processor(const JsonNode& node);

}  // namespace dq4::tokenizer
