#include "gbnf_parser.h"

#include <algorithm>
#include <unordered_map>

#include "code_points.h"
#include "dq4/constrain/constraint.h"

namespace dq4::constrain {
namespace {

constexpr char32_t kLastCodePoint = 0x10FFFF;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

// Sorted, merged, without surrogates (which UTF-8 cannot carry).
CodePointRanges normalize_ranges(CodePointRanges ranges) {
  std::sort(ranges.begin(), ranges.end());
  CodePointRanges merged;
  for (const auto& [lo, hi] : ranges) {
    if (!merged.empty() && lo <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, hi);
    } else {
      merged.emplace_back(lo, hi);
    }
  }
  CodePointRanges out;
  for (const auto& [lo, hi] : merged) {
    if (hi < 0xD800 || lo > 0xDFFF) {
      out.emplace_back(lo, hi);
      continue;
    }
    if (lo < 0xD800) out.emplace_back(lo, 0xD7FF);
    if (hi > 0xDFFF) out.emplace_back(0xE000, hi);
  }
  return out;
}

CodePointRanges complement_ranges(const CodePointRanges& ranges) {
  CodePointRanges out;
  char32_t next = 0;
  for (const auto& [lo, hi] : ranges) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kLastCodePoint) out.emplace_back(next, kLastCodePoint);
  return normalize_ranges(std::move(out));
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  GbnfGrammar parse() {
    GbnfGrammar grammar;
    std::unordered_map<std::string, size_t> defined;
    skip_space(true);
    while (pos_ < text_.size()) {
      GbnfRule rule = parse_rule();
      if (!defined.emplace(rule.name, rule.offset).second)
        fail(rule.offset, "rule '" + rule.name + "' is defined twice");
      grammar.rules.push_back(std::move(rule));
      skip_space(true);
    }
    return grammar;
  }

 private:
  [[noreturn]] void fail(size_t offset, const std::string& message) const {
    std::string where = "grammar: " + text_position(text_, offset);
    if (!rule_.empty()) where += " (rule '" + rule_ + "')";
    throw ConstraintError(where + ": " + message);
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  // Spaces, tabs and comments; newlines too when `newlines`.
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n' && peek() != '\r') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (pos_ == start) fail(start, "expected a rule name");
    return std::string(text_.substr(start, pos_ - start));
  }

  GbnfRule parse_rule() {
    GbnfRule rule;
    rule.offset = pos_;
    rule_.clear();
    rule.name = parse_name();
    rule_ = rule.name;
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail(pos_, "expected ::= after the rule name");
    pos_ += 3;
    skip_space(true);
    rule.body = parse_alternatives(0);
    if (!at_end() && peek() != '\n' && peek() != '\r')
      fail(pos_, std::string("unexpected '") + peek() + "'");
    return rule;
  }

  GbnfExpr parse_alternatives(int depth) {
    if (depth > kMaxNesting) fail(pos_, "groups nested too deeply");
    GbnfExpr alternatives;
    alternatives.kind = GbnfExpr::Kind::alternatives;
    alternatives.offset = pos_;
    const bool nested = depth > 0;
    alternatives.items.push_back(parse_sequence(depth));
    while (true) {
      if (!nested) {
        // A top-level rule continues on a line that starts with `|`.
        const size_t save = pos_;
        skip_space(true);
        if (peek() != '|') {
          pos_ = save;
          break;
        }
      }
      if (peek() != '|') break;
      ++pos_;
      skip_space(true);
      alternatives.items.push_back(parse_sequence(depth));
    }
    if (alternatives.items.size() == 1) return std::move(alternatives.items[0]);
    return alternatives;
  }

  GbnfExpr parse_sequence(int depth) {
    GbnfExpr sequence;
    sequence.kind = GbnfExpr::Kind::sequence;
    sequence.offset = pos_;
    const bool nested = depth > 0;
    while (!at_end()) {
      const char c = peek();
      if (c == '|' || c == ')' || c == '\n' || c == '\r') break;
      GbnfExpr item = parse_primary(depth);
      skip_space(nested);
      while (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{')) {
        item = parse_repetition(std::move(item));
        skip_space(nested);
      }
      sequence.items.push_back(std::move(item));
    }
    return sequence;
  }

  GbnfExpr parse_repetition(GbnfExpr item) {
    GbnfExpr repeat;
    repeat.kind = GbnfExpr::Kind::repeat;
    repeat.offset = pos_;
    const char c = peek();
    ++pos_;
    if (c == '*') {
      repeat.min = 0, repeat.max = -1;
    } else if (c == '+') {
      repeat.min = 1, repeat.max = -1;
    } else if (c == '?') {
      repeat.min = 0, repeat.max = 1;
    } else {
      skip_space(true);
      repeat.min = peek() == ',' ? 0 : parse_count();
      skip_space(true);
      if (peek() == ',') {
        ++pos_;
        skip_space(true);
        repeat.max = peek() == '}' ? -1 : parse_count();
        skip_space(true);
      } else {
        repeat.max = repeat.min;
      }
      if (peek() != '}') fail(pos_, "expected '}' to end the repetition");
      ++pos_;
      if (repeat.max >= 0 && repeat.max < repeat.min)
        fail(repeat.offset, "repetition {" + std::to_string(repeat.min) + "," +
                                std::to_string(repeat.max) + "}: the maximum is below the minimum");
    }
    repeat.items.push_back(std::move(item));
    return repeat;
  }

  int parse_count() {
    const size_t start = pos_;
    long value = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      value = value * 10 + (peek() - '0');
      if (value > kMaxRepetition)
        fail(start, "repetition bound too large (at most " + std::to_string(kMaxRepetition) + ")");
      ++pos_;
    }
    if (pos_ == start) fail(start, "expected a number in the repetition");
    return static_cast<int>(value);
  }

  GbnfExpr parse_primary(int depth) {
    GbnfExpr expr;
    expr.offset = pos_;
    const char c = peek();
    if (c == '"') {
      ++pos_;
      expr.kind = GbnfExpr::Kind::literal;
      while (true) {
        if (at_end() || peek() == '\n' || peek() == '\r') fail(expr.offset, "unterminated literal");
        if (peek() == '"') break;
        write_utf8(expr.bytes, parse_char());
      }
      ++pos_;
    } else if (c == '[') {
      ++pos_;
      expr.kind = GbnfExpr::Kind::char_class;
      const bool negated = peek() == '^';
      if (negated) ++pos_;
      CodePointRanges ranges;
      while (true) {
        if (at_end() || peek() == '\n' || peek() == '\r')
          fail(expr.offset, "unterminated character class");
        if (peek() == ']') break;
        const size_t at = pos_;
        const char32_t lo = parse_char();
        char32_t hi = lo;
        if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
          ++pos_;
          hi = parse_char();
          if (hi < lo) fail(at, "empty character range");
        }
        ranges.emplace_back(lo, hi);
      }
      ++pos_;
      expr.ranges = normalize_ranges(std::move(ranges));
      if (negated) expr.ranges = complement_ranges(expr.ranges);
    } else if (c == '.') {
      ++pos_;
      expr.kind = GbnfExpr::Kind::char_class;
      expr.ranges = normalize_ranges({{0, kLastCodePoint}});
    } else if (c == '(') {
      ++pos_;
      skip_space(true);
      expr = parse_alternatives(depth + 1);
      skip_space(true);
      if (peek() != ')') fail(pos_, "expected ')'");
      ++pos_;
    } else if (is_name_char(c)) {
      expr.kind = GbnfExpr::Kind::rule_ref;
      expr.name = parse_name();
      const size_t save = pos_;
      skip_space(false);
      if (text_.substr(pos_, 3) == "::=")
        fail(expr.offset, "rule '" + expr.name + "' starts on the line of the previous rule");
      pos_ = save;
    } else if (c == '<') {
      fail(pos_, "token references (<...>) are not supported");
    } else {
      fail(pos_, std::string("unexpected '") + c + "'");
    }
    return expr;
  }

  int hex_digit(char c) const {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // One character of a literal or class: an escape or one UTF-8 encoded code point.
  char32_t parse_char() {
    const size_t start = pos_;
    const auto byte = static_cast<unsigned char>(peek());
    if (byte == '\\') {
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        case 't':
          return '\t';
        case '\\':
          return '\\';
        case '"':
          return '"';
        case '[':
          return '[';
        case ']':
          return ']';
        case '-':
          return '-';
        case '^':
          return '^';
        case 'x':
          return parse_hex(2, start);
        case 'u':
          return parse_hex(4, start);
        case 'U':
          return parse_hex(8, start);
        default:
          fail(start, "unknown escape '\\" + std::string(1, e) + "'");
      }
    }
    int length = byte < 0x80                   ? 1
                 : byte >= 0xF0 && byte < 0xF5 ? 4
                 : byte >= 0xE0                ? 3
                 : byte >= 0xC2                ? 2
                                               : 0;
    if (byte >= 0xF5) length = 0;
    if (length == 0 || pos_ + length > text_.size()) fail(start, "invalid UTF-8");
    char32_t c = length == 1 ? byte : byte & (0x7F >> length);
    for (int i = 1; i < length; ++i) {
      const auto next = static_cast<unsigned char>(text_[pos_ + i]);
      if ((next & 0xC0) != 0x80) fail(start, "invalid UTF-8");
      c = (c << 6) | (next & 0x3F);
    }
    const char32_t min_for_length[] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min_for_length[length] || c > kLastCodePoint || (c >= 0xD800 && c <= 0xDFFF))
      fail(start, "invalid UTF-8");
    pos_ += length;
    return c;
  }

  char32_t parse_hex(int digits, size_t start) {
    char32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const int d = hex_digit(peek());
      if (d < 0) fail(start, "expected " + std::to_string(digits) + " hex digits in the escape");
      value = value * 16 + static_cast<char32_t>(d);
      ++pos_;
    }
    if (value > kLastCodePoint || (value >= 0xD800 && value <= 0xDFFF))
      fail(start, "escape names no Unicode scalar value");
    return value;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string rule_;  // the rule being parsed, for messages
};

}  // namespace

std::string text_position(std::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

GbnfGrammar parse_gbnf(std::string_view text) {
  if (text.size() > kMaxGrammarBytes)
    throw ConstraintError("grammar: " + std::to_string(text.size()) + " bytes, more than the " +
                          std::to_string(kMaxGrammarBytes) + " accepted");
  return GbnfParser(text).parse();
}

}  // namespace dq4::constrain
