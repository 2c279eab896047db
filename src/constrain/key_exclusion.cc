#include "key_exclusion.h"

#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "dq4/constrain/constraint.h"

namespace dq4::constrain {
namespace {

using K = JsonRules::Kind;

constexpr size_t kMaxNameBytes = 1024;

// A trie of the names' written code points.
struct Node {
  std::map<char32_t, std::unique_ptr<Node>> next;
  bool ends_name = false;
  bool in_escape = false;  // inside an escape sequence: only the name's own text may follow
};

void insert(Node& root, const std::string& written) {
  Node* at = &root;
  size_t pos = 0;
  size_t escape_left = 0;  // code points of an escape still to come after this one
  while (pos < written.size()) {
    const char32_t c = static_cast<char32_t>(decode_utf8(written, pos));
    const bool starts_escape = escape_left == 0 && c == '\\';
    auto& child = at->next[c];
    if (!child) child = std::make_unique<Node>();
    at = child.get();
    if (starts_escape) {
      escape_left = written[pos] == 'u' ? 5 : 1;
    } else if (escape_left > 0) {
      --escape_left;
    }
    at->in_escape = escape_left > 0;
  }
  at->ends_name = true;
}

class Writer {
 public:
  Writer(RuleSet& rules, JsonRules& json) : rules_(rules), json_(json) {}

  std::string rule(const Node& node) {
    const std::string close = "\"\\\"\" " + json_.ref(K::ws);
    std::string body;
    auto add = [&](const std::string& option) {
      if (!body.empty()) body += " | ";
      body += option;
    };
    CodePointSet taken = CodePointSet::range(0, 0x1F);
    taken.add('"', '"');
    taken.add('\\', '\\');
    taken.add(0x7F, 0x7F);
    for (const auto& [c, child] : node.next) {
      std::string text;
      write_utf8(text, c);
      add(gbnf_literal(text) + " " + rule(*child));
      taken.add(c, c);
    }
    if (!node.in_escape) {
      if (!node.ends_name) add(close);
      // Leaving every name here: a plain character none of them has next, then anything.
      add(gbnf_class(taken.complement()) + " " + json_.ref(K::character) + "* " + close);
    }
    const std::string name = rules_.fresh_name("key");
    rules_.define(name, body);
    return rules_.ref(name);
  }

 private:
  RuleSet& rules_;
  JsonRules& json_;
};

}  // namespace

std::string key_excluding_gbnf(const std::vector<std::string>& names, RuleSet& rules,
                               JsonRules& json) {
  Node root;
  for (const auto& name : names) {
    const std::string written = nlohmann::json(name).dump();
    if (written.size() > kMaxNameBytes) {  // the rules nest one level per character
      throw ConstraintError("json_schema: a property name longer than " +
                            std::to_string(kMaxNameBytes) +
                            " bytes beside additionalProperties is not supported");
    }
    insert(root, written.substr(1, written.size() - 2));
  }
  return "\"\\\"\" " + Writer(rules, json).rule(root);
}

}  // namespace dq4::constrain
