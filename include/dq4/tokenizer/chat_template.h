#pragma once
// Chat templates: the Jinja2 `chat_template` of a model's tokenizer, rendered for a conversation
// exactly as transformers' apply_chat_template(tokenize=False) renders it (Jinja2 with
// trim_blocks and lstrip_blocks, the special tokens, `tools`, raise_exception, strftime_now).
//
// Supported: the Jinja2 statements, expressions, filters, tests and Python str/dict methods that
// chat templates use (docs/architecture.md, "tokenizer"). Anything else is a dq4::Error naming the
// construct and its line and column; so is any runtime error, and raise_exception("...") gives
// a dq4::Error carrying the template's own message. Rendering is bounded in time, output size
// and recursion depth whatever the template does.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace dq4 {

class ChatTemplate {
 public:
  // The template of a model directory (find_source) or of a tokenizer_config.json file, with the
  // special tokens tokenizer_config.json names (bos_token, eos_token, unk_token, pad_token, ...:
  // strings or {"content": ...} objects; null ones are left out).
  static ChatTemplate from_tokenizer_config(const std::string& path_or_dir);
  // The template source of a model directory where transformers and vLLM look for it:
  // chat_template.jinja, else tokenizer_config.json's "chat_template" (a list of named templates
  // gives "default"), else a multimodal processor's chat_template.json; nullopt when none has
  // one. Throws dq4::Error naming the file for one that cannot be read or parsed.
  static std::optional<std::string> find_source(const std::string& dir);
  // A template from its source text, with no special tokens (set them with special_tokens()).
  static ChatTemplate from_source(std::string_view source);
  // The special tokens of a model directory's (or a file's) tokenizer_config.json, for a
  // template that comes from elsewhere; empty when there is no tokenizer_config.json.
  static std::map<std::string, std::string> read_special_tokens(const std::string& path_or_dir);

  // Renders for `context_json`: a JSON object {"messages": [...], "tools": [...], ...any other
  // template variables} or a bare array of messages. Like transformers, `tools` and `documents`
  // are None unless given, the special tokens are defined, and add_generation_prompt is set.
  std::string render(std::string_view context_json, bool add_generation_prompt) const;

  const std::string& source() const;
  // Token name ("bos_token") -> text, passed to every render; editable.
  std::map<std::string, std::string>& special_tokens() { return special_tokens_; }
  const std::map<std::string, std::string>& special_tokens() const { return special_tokens_; }

 private:
  struct Parsed;
  std::shared_ptr<const Parsed> parsed_;
  std::map<std::string, std::string> special_tokens_;
};

}  // namespace dq4
