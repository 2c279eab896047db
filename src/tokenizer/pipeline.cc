#include "pipeline.h"

#include <algorithm>
#include <unordered_set>

#include "utf8.h"

namespace dq4::tokenizer {

Pipeline::Pipeline(const JsonNode& root) {
  model_ = std::make_unique<BpeModel>(root.at("model"));
  if (root.has("normalizer")) normalizer_ = parse_normalizer(root.at("normalizer"));
  if (root.has("pre_tokenizer")) pre_tokenizer_ = parse_pre_tokenizer(root.at("pre_tokenizer"));
  if (root.has("post_processor")) post_processor_ = parse_post_processor(root.at("post_processor"));
  if (root.has("decoder")) decoder_ = parse_decoder(root.at("decoder"));
  if (root.has("added_tokens")) {
    auto normalize = [&](const std::string& text) {
      std::string out = text;
      if (normalizer_) normalizer_->normalize(out);
      return out;
    };
    auto model_id = [&](const std::string& text) { return model_->token_to_id(text); };
    added_ = AddedTokens(root.at("added_tokens"), normalize, model_id, model_->vocab_count());
  }

  size_t limit = model_->id_limit();
  for (const AddedToken& t : added_.tokens())
    limit = std::max(limit, static_cast<size_t>(t.id) + 1);
  added_by_id_.assign(limit, -1);
  special_by_id_.assign(limit, false);
  std::unordered_set<std::string> special_texts;
  for (size_t i = 0; i < added_.tokens().size(); ++i) {
    const AddedToken& t = added_.tokens()[i];
    added_by_id_[static_cast<size_t>(t.id)] = static_cast<int>(i);
    if (t.special) special_texts.insert(t.content);
  }
  for (size_t id = 0; id < limit; ++id) {
    const std::string* text = id_to_token(static_cast<TokenId>(id));
    if (text == nullptr) continue;
    ++vocab_size_;
    special_by_id_[id] = special_texts.count(*text) > 0;
  }
}

std::optional<TokenId> Pipeline::token_to_id(std::string_view token) const {
  if (const auto id = added_.find(token)) return id;
  return model_->token_to_id(token);
}

const std::string* Pipeline::id_to_token(TokenId id) const {
  if (id < 0) return nullptr;
  const auto index = static_cast<size_t>(id);
  if (index < added_by_id_.size() && added_by_id_[index] >= 0)
    return &added_.tokens()[static_cast<size_t>(added_by_id_[index])].text;
  return model_->id_to_token(id);
}

bool Pipeline::is_special(TokenId id) const {
  return id >= 0 && static_cast<size_t>(id) < special_by_id_.size() &&
         special_by_id_[static_cast<size_t>(id)];
}

std::optional<std::string> Pipeline::token_bytes(TokenId id) const {
  const std::string* text = id_to_token(id);
  if (text == nullptr) return std::nullopt;
  std::string bytes = *text;
  if (decoder_) decoder_->token_bytes(bytes);
  return bytes;
}

std::vector<TokenId> Pipeline::encode(std::string_view text, bool add_special_tokens) const {
  check_utf8(text, "encode: the text");
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 4);
  for (const TextSplit& raw : added_.split(text, false)) {
    if (raw.token >= 0) {
      ids.push_back(added_.tokens()[static_cast<size_t>(raw.token)].id);
      continue;
    }
    std::string normalized(text.substr(raw.begin, raw.end - raw.begin));
    if (normalizer_) normalizer_->normalize(normalized);
    for (const TextSplit& part : added_.split(normalized, true)) {
      if (part.token >= 0) {
        ids.push_back(added_.tokens()[static_cast<size_t>(part.token)].id);
      } else {
        encode_segment(std::string_view(normalized).substr(part.begin, part.end - part.begin),
                       raw.begin == 0 && part.begin == 0, ids);
      }
    }
  }
  if (add_special_tokens && post_processor_) post_processor_->add_special_tokens(ids);
  return ids;
}

void Pipeline::encode_segment(std::string_view text, bool at_input_start,
                              std::vector<TokenId>& ids) const {
  std::vector<Piece> pieces{Piece{std::string(text), at_input_start}};
  if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pieces);
  for (const Piece& piece : pieces) model_->tokenize(piece.text, ids);
}

std::string Pipeline::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const TokenId id : ids) {
    const std::string* text = id_to_token(id);
    if (text == nullptr || (skip_special_tokens && is_special(id))) continue;
    tokens.push_back(*text);
  }
  std::string out;
  if (!decoder_) {  // Hugging Face joins with spaces when there is no decoder
    for (size_t i = 0; i < tokens.size(); ++i) out += (i > 0 ? " " : "") + tokens[i];
    return out;
  }
  decoder_->decode_chain(tokens);
  for (const std::string& t : tokens) out += t;
  return out;
}

}  // namespace dq4::tokenizer
