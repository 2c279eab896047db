#include "bpe.h"

#include <cstdio>
#include <queue>

#include "dq4/kernels/error.h"
#include "utf8.h"

namespace dq4::tokenizer {
namespace {

// Pre-tokens at least this long are not cached (as in Hugging Face's BPE).
constexpr size_t kMaxCachedLength = 256;

struct Symbol {
  TokenId id;
  int prev, next;
  bool alive;
};

struct QueueEntry {
  uint32_t rank;
  int pos;
  TokenId merged;
  // std::priority_queue pops the largest: invert so the lowest rank, then leftmost, comes first.
  bool operator<(const QueueEntry& other) const {
    return rank != other.rank ? rank > other.rank : pos > other.pos;
  }
};

}  // namespace

BpeModel::BpeModel(const JsonNode& model) : where_(model.where()) {
  // Older files may leave out the type; Hugging Face then tries each model, BPE first.
  if (!model.has("type")) {
    if (!model.has("merges")) model.fail("no \"type\" and no BPE merges");
  } else if (model.type() != "BPE") {
    model.unsupported("model");
  }
  if (model.has("dropout")) {
    const JsonNode dropout = model.at("dropout");
    if (!dropout.value().is_number() || dropout.value().get<double>() != 0.0)
      dropout.fail("BPE dropout is not supported (only null or 0)");
  }
  const JsonNode vocab = model.at("vocab");
  if (!vocab.value().is_object()) vocab.fail("expected an object of token: id");
  vocab_.reserve(vocab.value().size());
  for (const auto& [token, id] : vocab.value().items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      vocab.fail("token \"" + token + "\" has an id that is not an integer in [0, 2^31)");
    vocab_.emplace(token, static_cast<TokenId>(id.get<int64_t>()));
  }
  for (const auto& [token, id] : vocab_) {
    if (static_cast<size_t>(id) >= tokens_.size()) tokens_.resize(static_cast<size_t>(id) + 1);
    tokens_[static_cast<size_t>(id)] = &token;
  }
  if (model.has("unk_token")) unk_token_ = model.get_string("unk_token");
  continuing_subword_prefix_ = model.get_string("continuing_subword_prefix", "");
  end_of_word_suffix_ = model.get_string("end_of_word_suffix", "");
  byte_fallback_ = model.get_bool("byte_fallback", false);
  fuse_unk_ = model.get_bool("fuse_unk", false);
  ignore_merges_ = model.get_bool("ignore_merges", false);
  byte_ids_.assign(256, -1);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    if (const auto it = vocab_.find(std::string_view(name)); it != vocab_.end())
      byte_ids_[b] = it->second;
  }
  load_merges(model.at("merges"));
}

void BpeModel::load_merges(const JsonNode& merges) {
  const size_t count = merges.size();
  merges_.reserve(count);
  std::string a, b, merged;
  for (size_t i = 0; i < count; ++i) {
    const nlohmann::json& merge = merges.value()[i];
    if (merge.is_string()) {  // "a b"
      const auto& text = merge.get_ref<const std::string&>();
      const size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
        merges.at(i).fail("expected \"<left> <right>\" with exactly one space");
      a.assign(text, 0, space);
      b.assign(text, space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {  // ["a", "b"]
      a = merge[0].get_ref<const std::string&>();
      b = merge[1].get_ref<const std::string&>();
    } else {
      merges.at(i).fail("expected \"<left> <right>\" or [\"<left>\", \"<right>\"]");
    }
    if (b.size() < continuing_subword_prefix_.size())
      merges.at(i).fail("right token shorter than continuing_subword_prefix");
    merged.assign(a).append(b, continuing_subword_prefix_.size());
    const auto left = vocab_.find(a), right = vocab_.find(b), result = vocab_.find(merged);
    for (const auto& [it, text] : {std::pair{left, &a}, {right, &b}, {result, &merged}})
      if (it == vocab_.end())
        merges.at(i).fail("merge token \"" + *text + "\" is not in the vocabulary");
    // A repeated pair keeps its last rank, as Hugging Face's HashMap collection does.
    merges_[pair_key(left->second, right->second)] =
        Merge{static_cast<uint32_t>(i), result->second};
  }
}

std::optional<TokenId> BpeModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) return nullptr;
  return tokens_[static_cast<size_t>(id)];
}

void BpeModel::tokenize(std::string_view piece, std::vector<TokenId>& out) const {
  if (piece.empty()) return;
  const bool cacheable = piece.size() < kMaxCachedLength;
  if (cacheable && cache_.lookup(piece, out)) return;
  const size_t first = out.size();
  const auto whole = ignore_merges_ ? vocab_.find(piece) : vocab_.end();
  if (whole != vocab_.end()) {
    out.push_back(whole->second);  // ignore_merges: a pre-token in the vocabulary is one token
  } else {
    merge_word(piece, out);
  }
  if (cacheable) cache_.insert(piece, std::span(out).subspan(first));
}

void BpeModel::merge_word(std::string_view piece, std::vector<TokenId>& out) const {
  std::vector<Symbol> symbols;
  symbols.reserve(piece.size());
  auto add = [&](TokenId id) {
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({id, index - 1, index + 1, true});
  };
  TokenId pending_unk = -1;  // an unk id not added yet (fuse_unk grows it)
  std::string with_affixes;
  for (size_t pos = 0; pos < piece.size();) {
    const size_t begin = pos;
    pos += utf8_length(static_cast<unsigned char>(piece[pos]));
    std::string_view s = piece.substr(begin, pos - begin);
    if ((begin > 0 && !continuing_subword_prefix_.empty()) ||
        (pos == piece.size() && !end_of_word_suffix_.empty())) {
      with_affixes.assign(begin > 0 ? continuing_subword_prefix_ : "");
      with_affixes.append(s);
      if (pos == piece.size()) with_affixes.append(end_of_word_suffix_);
      s = with_affixes;
    }
    if (const auto it = vocab_.find(s); it != vocab_.end()) {
      if (pending_unk >= 0) add(pending_unk);
      pending_unk = -1;
      add(it->second);
      continue;
    }
    if (byte_fallback_) {
      bool all_bytes = true;
      for (const char c : s) all_bytes = all_bytes && byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all_bytes) {
        // Hugging Face leaves a pending unk pending across byte tokens; so do we.
        for (const char c : s) add(byte_ids_[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    if (!unk_token_) continue;  // no unk token: the character is dropped
    const auto unk = vocab_.find(*unk_token_);
    if (unk == vocab_.end())
      throw Error(where_ + ": unk_token \"" + *unk_token_ + "\" is not in the vocabulary");
    if (pending_unk >= 0 && !fuse_unk_) add(pending_unk);
    if (pending_unk < 0 || !fuse_unk_) pending_unk = unk->second;
  }
  if (pending_unk >= 0) add(pending_unk);
  if (symbols.empty()) return;
  symbols.back().next = -1;

  std::priority_queue<QueueEntry> queue;
  auto push_pair = [&](int pos) {
    const int next = symbols[pos].next;
    if (next < 0) return;
    const auto it = merges_.find(pair_key(symbols[pos].id, symbols[next].id));
    if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.merged});
  };
  for (int i = 0; i + 1 < static_cast<int>(symbols.size()); ++i) push_pair(i);
  while (!queue.empty()) {
    const QueueEntry top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    // Skip entries made stale by an earlier merge of either symbol.
    const auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.merged != top.merged) continue;
    left.id = top.merged;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  for (const Symbol& s : symbols)
    if (s.alive) out.push_back(s.id);
}

}  // namespace dq4::tokenizer
