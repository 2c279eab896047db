// dq4::Tokenizer: loading tokenizer.json (+ tokenizer_config.json) and the public entry points.

#include "dq4/tokenizer/tokenizer.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "dq4/kernels/error.h"
#include "pipeline.h"
#include "utf8.h"

namespace dq4 {
namespace {

using tokenizer::JsonNode;
using tokenizer::Pipeline;

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw Error("cannot read " + path + ": " + std::strerror(errno));
  out = std::move(buffer).str();
  return true;
}

nlohmann::json parse_json(std::string_view text, const std::string& name) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // nlohmann quotes the bytes it read last, which may not be valid UTF-8.
    throw Error(name + ": not valid JSON: " + tokenizer::utf8_lossy(e.what()));
  }
}

// bos_token / eos_token: a string or an AddedToken object {"content": ...}.
std::optional<TokenId> config_token(const JsonNode& config, const char* key,
                                    const Pipeline& pipeline) {
  if (!config.has(key)) return std::nullopt;
  const JsonNode value = config.at(key);
  const std::string text =
      value.value().is_object() ? value.get_string("content") : value.as_string();
  return pipeline.token_to_id(text);
}

}  // namespace

Tokenizer Tokenizer::from_json(std::string_view json, const std::string& name) {
  const nlohmann::json document = parse_json(json, name);
  return Tokenizer(std::make_shared<Pipeline>(JsonNode(document, name, "")));
}

Tokenizer Tokenizer::from_directory(const std::string& dir) {
  const std::string path = dir + "/tokenizer.json";
  std::string text;
  if (!read_file(path, text)) throw Error("cannot open " + path + ": " + std::strerror(errno));
  const nlohmann::json document = parse_json(text, path);
  auto pipeline = std::make_shared<Pipeline>(JsonNode(document, path, ""));

  const std::string config_path = dir + "/tokenizer_config.json";
  if (read_file(config_path, text)) {
    const nlohmann::json config_document = parse_json(text, config_path);
    const JsonNode config(config_document, config_path, "");
    if (!config_document.is_object()) config.fail("expected a JSON object");
    pipeline->bos_id = config_token(config, "bos_token", *pipeline);
    pipeline->eos_id = config_token(config, "eos_token", *pipeline);
  }
  return Tokenizer(std::move(pipeline));
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return pipeline_->encode(text, add_special_tokens);
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  return pipeline_->decode(ids, skip_special_tokens);
}

std::optional<TokenId> Tokenizer::token_to_id(std::string_view token) const {
  return pipeline_->token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(TokenId id) const {
  const std::string* text = pipeline_->id_to_token(id);
  if (text == nullptr) return std::nullopt;
  return *text;
}

std::optional<std::string> Tokenizer::token_bytes(TokenId id) const {
  return pipeline_->token_bytes(id);
}

bool Tokenizer::is_special(TokenId id) const { return pipeline_->is_special(id); }

std::vector<std::string> Tokenizer::added_tokens() const {
  std::vector<std::string> texts;
  for (const tokenizer::AddedToken& t : pipeline_->added_tokens()) texts.push_back(t.content);
  return texts;
}

size_t Tokenizer::vocab_size() const { return pipeline_->vocab_size(); }
std::optional<TokenId> Tokenizer::bos_id() const { return pipeline_->bos_id; }
std::optional<TokenId> Tokenizer::eos_id() const { return pipeline_->eos_id; }

}  // namespace dq4
