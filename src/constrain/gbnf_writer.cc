#include "gbnf_writer.h"

#include <cstdio>

#include "dq4/constrain/constraint.h"

namespace dq4::constrain {
namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

std::string hex_escape(char32_t c) {
  char buf[16];
  if (c < 0x100) {
    std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(c));
  } else if (c < 0x10000) {
    std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(c));
  } else {
    std::snprintf(buf, sizeof buf, "\\U%08X", static_cast<unsigned>(c));
  }
  return buf;
}

// A code point inside a class: what could read as class syntax is written as a hex escape.
std::string class_char(char32_t c) {
  if (c < 0x20 || c == 0x7F || c == '\\' || c == ']' || c == '[' || c == '-' || c == '^' ||
      (c >= 0x80 && c <= 0x9F)) {
    return hex_escape(c);
  }
  std::string out;
  write_utf8(out, c);
  return out;
}

std::string class_body(const CodePointSet& set) {
  std::string out;
  for (const auto& [first, last] : set.ranges()) {
    out += class_char(first);
    if (last != first) {
      if (last != first + 1) out += '-';
      out += class_char(last);
    }
  }
  return out;
}

}  // namespace

std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  size_t pos = 0;
  while (pos < text.size()) {
    const long c = decode_utf8(text, pos);
    if (c < 0) throw ConstraintError("constrain: text is not valid UTF-8");
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F)) {
          out += hex_escape(static_cast<char32_t>(c));
        } else {
          write_utf8(out, static_cast<char32_t>(c));
        }
    }
  }
  return out + "\"";
}

std::string gbnf_class(const CodePointSet& set) {
  if (set.single()) {
    std::string text;
    write_utf8(text, set.ranges()[0].first);
    return gbnf_literal(text);
  }
  std::string positive = "[" + class_body(set) + "]";
  std::string negative = "[^" + class_body(set.complement()) + "]";
  return negative.size() < positive.size() ? negative : positive;
}

RuleSet::RuleSet(std::string_view prefix) : prefix_(prefix) {
  for (char c : prefix_) {
    if (!name_char(c)) {
      throw ConstraintError("constrain: rule prefix '" + prefix_ +
                            "' may hold only letters, digits and '-'");
    }
  }
}

std::string RuleSet::fresh_name(std::string_view hint) {
  std::string base;
  for (char c : hint.substr(0, 40)) base += name_char(c) ? c : '-';
  if (base.empty()) base = "r";
  std::string name = base;
  for (int i = 1; bodies_.count(name) != 0; ++i) name = base + "-" + std::to_string(i);
  bodies_.emplace(name, std::string());
  return name;
}

void RuleSet::define(const std::string& name, std::string body) {
  bytes_ += name.size() + body.size() + prefix_.size() + 6;
  if (bytes_ > kMaxGrammarBytes) {
    throw ConstraintError("constrain: the grammar needed is larger than " +
                          std::to_string(kMaxGrammarBytes) + " bytes");
  }
  bodies_[name] = std::move(body);
  order_.push_back(name);
}

std::string RuleSet::shared(std::string_view hint, const std::string& body) {
  auto it = by_body_.find(body);
  if (it == by_body_.end()) {
    const std::string name = fresh_name(hint);
    define(name, body);
    it = by_body_.emplace(body, name).first;
  }
  return ref(it->second);
}

std::string RuleSet::text() const {
  std::string out;
  auto write = [&](const std::string& name) {
    out += prefix_ + name + " ::= " + bodies_.at(name) + "\n";
  };
  if (bodies_.count("root") == 0) throw ConstraintError("constrain: grammar without a root rule");
  write("root");
  for (const auto& name : order_) {
    if (name != "root") write(name);
  }
  for (const auto& [name, body] : bodies_) {
    if (body.empty()) throw ConstraintError("constrain: rule '" + name + "' left undefined");
  }
  return out;
}

}  // namespace dq4::constrain
