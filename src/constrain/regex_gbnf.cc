#include "regex_gbnf.h"

#include <cstdio>
#include <utility>

#include "dq4/constrain/constraint.h"
#include "dq4/constrain/to_gbnf.h"

namespace dq4::constrain {
namespace {

using Kind = RegexNode::Kind;

// How a JSON string writes `c`: itself, or the escape JSON requires.
std::string json_text(char32_t c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    default:
      break;
  }
  std::string out;
  if (c < 0x20) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
    out = buf;
  } else {
    write_utf8(out, c);
  }
  return out;
}

class Emitter {
 public:
  Emitter(RuleSet& rules, bool json_string) : rules_(rules), json_(json_string) {}

  // The expression, and whether it can take a quantifier or sit in a sequence without parentheses.
  std::pair<std::string, bool> emit(const RegexNode& n) {
    switch (n.kind) {
      case Kind::nothing:
        throw ConstraintError("regex: the pattern matches nothing");
      case Kind::empty:
        return {"\"\"", true};
      case Kind::chars:
        return {chars(n.chars), true};
      case Kind::concat:
        return {concat(n), n.children.size() <= 1};
      case Kind::alt: {
        std::string out;
        for (const auto& c : n.children) {
          if (!out.empty()) out += " | ";
          out += emit(c).first;
        }
        return {out, false};
      }
      case Kind::repeat:
        return {repeat(n), true};
    }
    return {"\"\"", true};
  }

 private:
  std::string chars(const CodePointSet& set) {
    if (!json_) return gbnf_class(set);
    const CodePointSet special = json_specials();
    std::vector<std::string> options;
    const CodePointSet plain = set.minus(special);
    if (!plain.empty()) options.push_back(gbnf_class(plain));
    std::string escapes;
    const CodePointSet escaped = set.intersect(special);
    for (const auto& [first, last] : escaped.ranges()) {
      for (char32_t c = first; c <= last; ++c) {
        if (!escapes.empty()) escapes += " | ";
        escapes += gbnf_literal(json_text(c));
      }
    }
    if (!escapes.empty()) {
      options.push_back(escapes.find('|') == std::string::npos ? escapes
                                                               : rules_.shared("esc", escapes));
    }
    if (options.size() == 1) return options[0];
    return "( " + options[0] + " | " + options[1] + " )";
  }

  std::string concat(const RegexNode& n) {
    std::string out;
    std::string run;  // consecutive single characters, written as one literal
    auto flush = [&] {
      if (run.empty()) return;
      if (!out.empty()) out += ' ';
      out += gbnf_literal(run);
      run.clear();
    };
    for (const auto& c : n.children) {
      if (c.kind == Kind::chars && c.chars.single()) {
        const char32_t cp = c.chars.ranges()[0].first;
        if (json_) {
          run += json_text(cp);
        } else {
          write_utf8(run, cp);
        }
        continue;
      }
      flush();
      auto [text, atomic] = emit(c);
      if (!out.empty()) out += ' ';
      out += atomic ? text : "( " + text + " )";
    }
    flush();
    return out;
  }

  std::string repeat(const RegexNode& n) {
    const RegexNode& child = n.children[0];
    // A class or one character takes the quantifier itself; anything longer becomes a rule.
    const bool one_char =
        child.kind == Kind::chars && (!json_ || child.chars.intersect(json_specials()).empty());
    const std::string item = one_char ? chars(child.chars) : rules_.shared("re", emit(child).first);
    if (n.min == 0 && n.max == 1) return item + "?";
    if (n.min == 0 && n.max == -1) return item + "*";
    if (n.min == 1 && n.max == -1) return item + "+";
    if (n.max == n.min) return item + "{" + std::to_string(n.min) + "}";
    if (n.max == -1) return item + "{" + std::to_string(n.min) + ",}";
    return item + "{" + std::to_string(n.min) + "," + std::to_string(n.max) + "}";
  }

  static CodePointSet json_specials() {
    CodePointSet special = CodePointSet::range(0, 0x1F);
    special.add('"', '"');
    special.add('\\', '\\');
    return special;
  }

  RuleSet& rules_;
  bool json_;
};

}  // namespace

std::string regex_expression(const RegexNode& tree, RuleSet& rules, bool json_string) {
  return Emitter(rules, json_string).emit(tree).first;
}

std::string regex_to_gbnf(std::string_view pattern, std::string_view rule_prefix) {
  RuleSet rules(rule_prefix);
  const std::string root = rules.fresh_name("root");
  const RegexNode tree = parse_regex(pattern);
  rules.define(root, regex_expression(tree, rules, false));
  return rules.text();
}

}  // namespace dq4::constrain
