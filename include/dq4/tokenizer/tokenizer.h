#pragma once
// Hugging Face tokenizers, from a model's tokenizer.json: the same ids and text as the `tokenizers`
// library (BPE models with their normalizers, pre-tokenizers, added tokens, post-processors and
// decoders). Anything a file asks for that dq4 does not implement is an error naming the
// component and its JSON path, never a silent difference.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dq4 {

using TokenId = int32_t;

namespace tokenizer {
class Pipeline;
}

class Tokenizer {
 public:
  // Reads dir/tokenizer.json and, when present, dir/tokenizer_config.json (bos/eos tokens).
  static Tokenizer from_directory(const std::string& dir);
  // Parses the text of a tokenizer.json; `name` stands for the file in error messages.
  static Tokenizer from_json(std::string_view json, const std::string& name);

  // Hugging Face's encode(text, add_special_tokens): added tokens written in the text are always
  // matched; add_special_tokens applies the post-processor (e.g. a leading BOS). The whole text
  // is encoded, as transformers and vLLM encode a prompt: the file's training-time "truncation"
  // and "padding" settings are not applied. Throws dq4::Error when text is not valid UTF-8. Safe
  // to call from several threads.
  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = false) const;

  // Hugging Face's decode(ids, skip_special_tokens); ids the vocabulary lacks are left out.
  std::string decode(std::span<const TokenId> ids, bool skip_special_tokens = false) const;

  std::optional<TokenId> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(TokenId id) const;
  // The bytes `id` adds to a decoded text in its middle (byte-level characters as their bytes, the
  // metaspace as a space, <0xHH> as the byte HH): a piece of a UTF-8 character for some tokens.
  // Null when the vocabulary lacks `id`.
  std::optional<std::string> token_bytes(TokenId id) const;
  // Whether `id` is a special added token (what skip_special_tokens leaves out).
  bool is_special(TokenId id) const;
  // The texts of the added tokens (special or not), in the file's order.
  std::vector<std::string> added_tokens() const;
  // Distinct ids of the model's vocabulary and the added tokens together.
  size_t vocab_size() const;
  // The bos_token / eos_token of tokenizer_config.json, when it names one the vocabulary has.
  std::optional<TokenId> bos_id() const;
  std::optional<TokenId> eos_id() const;

 private:
  explicit Tokenizer(std::shared_ptr<const tokenizer::Pipeline> pipeline)
      : pipeline_(std::move(pipeline)) {}
  std::shared_ptr<const tokenizer::Pipeline> pipeline_;
};

}  // namespace dq4
