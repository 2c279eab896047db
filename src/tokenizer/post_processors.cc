#include "post_processors.h"

#include <map>
#include <string>

namespace dq4::tokenizer {
namespace {

class SequenceProcessor : public PostProcessor {
 public:
  explicit SequenceProcessor(const JsonNode& node) {
    const JsonNode list = node.at("processors");
    for (size_t i = 0; i < list.size(); ++i) steps_.push_back(parse_post_processor(list.at(i)));
  }
  void add_special_tokens(std::vector<TokenId>& ids) const override {
    for (const auto& step : steps_) step->add_special_tokens(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

// ByteLevel only adjusts offsets, which dq4 does not report.
class IdentityProcessor : public PostProcessor {
 public:
  void add_special_tokens(std::vector<TokenId>&) const override {}
};

// The ids before and after the sequence.
class WrapProcessor : public PostProcessor {
 public:
  WrapProcessor(std::vector<TokenId> before, std::vector<TokenId> after)
      : before_(std::move(before)), after_(std::move(after)) {}
  void add_special_tokens(std::vector<TokenId>& ids) const override {
    ids.insert(ids.begin(), before_.begin(), before_.end());
    ids.insert(ids.end(), after_.begin(), after_.end());
  }

 private:
  std::vector<TokenId> before_, after_;
};

TokenId parse_id(const JsonNode& node) {
  const int64_t id = node.as_int();
  if (id < 0 || id > INT32_MAX) node.fail("expected a token id in [0, 2^31)");
  return static_cast<TokenId>(id);
}

// TemplateProcessing's "single": [{"SpecialToken": {"id": name}} | {"Sequence": {"id": "A"}}]
// or the string form "<s> $A".
std::unique_ptr<PostProcessor> parse_template(const JsonNode& node) {
  std::map<std::string, std::vector<TokenId>> specials;
  if (node.has("special_tokens")) {
    const JsonNode map = node.at("special_tokens");
    if (!map.value().is_object()) map.fail("expected an object");
    for (const auto& [name, value] : map.value().items()) {
      const JsonNode ids = JsonNode(value, map.file(), map.path() + "." + name).at("ids");
      for (size_t i = 0; i < ids.size(); ++i) specials[name].push_back(parse_id(ids.at(i)));
    }
  }
  std::vector<TokenId> before, after;
  bool seen_sequence = false;
  auto add_special = [&](const JsonNode& where, const std::string& name) {
    const auto it = specials.find(name);
    if (it == specials.end()) where.fail("special token \"" + name + "\" not in special_tokens");
    auto& target = seen_sequence ? after : before;
    target.insert(target.end(), it->second.begin(), it->second.end());
  };
  auto add_sequence = [&](const JsonNode& where, const std::string& name) {
    if (name != "A" || seen_sequence)
      where.fail("the single-sequence template may hold sequence A once, not \"" + name + "\"");
    seen_sequence = true;
  };
  const JsonNode single = node.at("single");
  if (single.value().is_string()) {
    const std::string text = single.as_string();
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find(' ', pos);
      if (end == std::string::npos) end = text.size();
      std::string item = text.substr(pos, end - pos);
      pos = end + 1;
      if (item.empty()) continue;
      if (const size_t colon = item.rfind(':'); colon != std::string::npos && colon > 0)
        item.resize(colon);  // drop the type id
      if (item[0] == '$') {
        add_sequence(single, item.size() == 1 || item == "$0" ? "A" : item.substr(1));
      } else {
        add_special(single, item);
      }
    }
  } else {
    for (size_t i = 0; i < single.size(); ++i) {
      const JsonNode item = single.at(i);
      if (item.has("SpecialToken")) {
        add_special(item, item.at("SpecialToken").get_string("id"));
      } else if (item.has("Sequence")) {
        add_sequence(item, item.at("Sequence").get_string("id"));
      } else {
        item.fail("expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
      }
    }
  }
  if (!seen_sequence) single.fail("the template has no sequence A");
  return std::make_unique<WrapProcessor>(std::move(before), std::move(after));
}

// RobertaProcessing / BertProcessing: "cls": [token, id], "sep": [token, id] around the text.
std::unique_ptr<PostProcessor> parse_cls_sep(const JsonNode& node) {
  auto id_of = [&](const char* key) {
    const JsonNode pair = node.at(key);
    if (pair.size() != 2) pair.fail("expected [token, id]");
    return parse_id(pair.at(1));
  };
  return std::make_unique<WrapProcessor>(std::vector<TokenId>{id_of("cls")},
                                         std::vector<TokenId>{id_of("sep")});
}

}  // namespace

std::unique_ptr<PostProcessor> parse_post_processor(const JsonNode& node) {
  const std::string type = node.type();
  if (type == "Sequence") return std::make_unique<SequenceProcessor>(node);
  if (type == "ByteLevel") return std::make_unique<IdentityProcessor>();
  if (type == "TemplateProcessing") return parse_template(node);
  if (type == "RobertaProcessing" || type == "BertProcessing") return parse_cls_sep(node);
  node.unsupported("post-processor");
}

}  // namespace dq4::tokenizer
