#include "normalizers.h"

#include <vector>

#include "pattern.h"
#include "unicode.h"

namespace dq4::tokenizer {
namespace {

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(const JsonNode& node) {
    const JsonNode list = node.at("normalizers");
    for (size_t i = 0; i < list.size(); ++i) steps_.push_back(parse_normalizer(list.at(i)));
  }
  void normalize(std::string& text) const override {
    for (const auto& step : steps_) step->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(const JsonNode& node) : prefix_(node.get_string("prepend")) {}
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer : public Normalizer {
 public:
  explicit ReplaceNormalizer(const JsonNode& node)
      : pattern_(node.at("pattern")), content_(node.get_string("content")) {}
  void normalize(std::string& text) const override { text = pattern_.replace_all(text, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
  void normalize(std::string& text) const override { text = normalize_unicode(text, form_); }

 private:
  NormalForm form_;
};

}  // namespace

std::unique_ptr<Normalizer> parse_normalizer(const JsonNode& node) {
  const std::string type = node.type();
  if (type == "Sequence") return std::make_unique<SequenceNormalizer>(node);
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(node);
  if (type == "Replace") return std::make_unique<ReplaceNormalizer>(node);
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfc);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfd);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfkc);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfkd);
  node.unsupported("normalizer");
}

}  // namespace dq4::tokenizer
