#include "pre_tokenizers.h"

#include <string>

#include "dq4/tokenizer/byte_level.h"
#include "pattern.h"
#include "regex.h"
#include "unicode.h"
#include "utf8.h"

namespace dq4::tokenizer {
namespace {

// One match per character for which `predicate` holds, as HF's Fn(char) -> bool pattern.
template <typename Predicate>
Matches find_chars(std::string_view text, Predicate predicate) {
  Matches matches;
  for (size_t pos = 0; pos < text.size();) {
    const size_t begin = pos;
    if (predicate(next_code_point(text, pos))) matches.emplace_back(begin, pos);
  }
  return matches;
}

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(const JsonNode& node) {
    const JsonNode list = node.at("pretokenizers");
    for (size_t i = 0; i < list.size(); ++i) steps_.push_back(parse_pre_tokenizer(list.at(i)));
  }
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (const auto& step : steps_) step->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  explicit ByteLevelPreTokenizer(const JsonNode& node)
      : add_prefix_space_(node.get_bool("add_prefix_space", true)) {
    if (node.get_bool("use_regex", true))
      regex_ = std::make_unique<Regex>(
          R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
          node.where());
  }
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out, split;
    out.reserve(pieces.size());
    for (Piece& piece : pieces) {
      if (add_prefix_space_ && piece.text.compare(0, 1, " ") != 0) piece.text.insert(0, " ");
      if (regex_) {
        split.clear();
        split_piece(piece, regex_->find_all(piece.text), SplitBehavior::kIsolated, false, split);
        for (const Piece& part : split) out.push_back(mapped(part));
      } else {
        out.push_back(mapped(piece));
      }
    }
    pieces = std::move(out);
  }

 private:
  static Piece mapped(const Piece& piece) {
    Piece out{std::string(), piece.at_input_start};
    append_byte_level(out.text, piece.text);
    return out;
  }

  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

class SplitPreTokenizer : public PreTokenizer {
 public:
  explicit SplitPreTokenizer(const JsonNode& node)
      : pattern_(node.at("pattern")), invert_(node.get_bool("invert", false)) {
    const JsonNode behavior = node.at("behavior");
    if (!parse_split_behavior(behavior.as_string(), behavior_))
      behavior.fail("unsupported split behavior \"" + behavior.as_string() + "\"");
  }
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size());
    for (const Piece& piece : pieces)
      split_piece(piece, pattern_.find_all(piece.text), behavior_, invert_, out);
    pieces = std::move(out);
  }

 private:
  Pattern pattern_;
  bool invert_;
  SplitBehavior behavior_;
};

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  enum class Prepend { kAlways, kFirst, kNever };

  explicit MetaspacePreTokenizer(const JsonNode& node) {
    const char32_t replacement = node.at("replacement").as_char();
    append_utf8(replacement_, replacement);
    split_ = node.get_bool("split", true);
    if (node.has("prepend_scheme")) {
      const JsonNode scheme = node.at("prepend_scheme");
      const std::string name = scheme.as_string();
      if (name == "always") {
        prepend_ = Prepend::kAlways;
      } else if (name == "first") {
        prepend_ = Prepend::kFirst;
      } else if (name == "never") {
        prepend_ = Prepend::kNever;
      } else {
        scheme.fail("unsupported prepend_scheme \"" + name + "\"");
      }
    } else {  // files older than prepend_scheme
      prepend_ = node.get_bool("add_prefix_space", true) ? Prepend::kAlways : Prepend::kNever;
    }
  }
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size());
    for (Piece& piece : pieces) {
      piece.text = replace_literal(piece.text, " ", replacement_);
      const bool starts_with = piece.text.compare(0, replacement_.size(), replacement_) == 0;
      if (!starts_with &&
          (prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && piece.at_input_start)))
        piece.text.insert(0, replacement_);
      if (split_) {
        split_piece(piece, find_literal(piece.text, replacement_), SplitBehavior::kMergedWithNext,
                    false, out);
      } else {
        out.push_back(std::move(piece));
      }
    }
    pieces = std::move(out);
  }

 private:
  std::string replacement_;
  Prepend prepend_;
  bool split_;
};

class DigitsPreTokenizer : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(const JsonNode& node)
      : individual_(node.get_bool("individual_digits", false)) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size());
    for (const Piece& piece : pieces)
      split_piece(piece, find_chars(piece.text, is_numeric),
                  individual_ ? SplitBehavior::kIsolated : SplitBehavior::kContiguous, false, out);
    pieces = std::move(out);
  }

 private:
  bool individual_;
};

}  // namespace

std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const JsonNode& node) {
  const std::string type = node.type();
  if (type == "Sequence") return std::make_unique<SequencePreTokenizer>(node);
  if (type == "ByteLevel") return std::make_unique<ByteLevelPreTokenizer>(node);
  if (type == "Split") return std::make_unique<SplitPreTokenizer>(node);
  if (type == "Metaspace") return std::make_unique<MetaspacePreTokenizer>(node);
  if (type == "Digits") return std::make_unique<DigitsPreTokenizer>(node);
  node.unsupported("pre-tokenizer");
}

}  // namespace dq4::tokenizer
