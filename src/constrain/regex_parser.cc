#include <string>
#include <utility>

#include "dq4/constrain/constraint.h"
#include "gbnf_writer.h"
#include "regex_ast.h"

namespace dq4::constrain {
namespace {

using Kind = RegexNode::Kind;

constexpr int kMaxGroupDepth = 64;
// Nodes the rewrite may create (it copies the parts of a sequence that can be empty).
constexpr size_t kMaxNodes = 100000;

RegexNode node(Kind kind) {
  RegexNode n;
  n.kind = kind;
  return n;
}

RegexNode chars_node(CodePointSet set) {
  RegexNode n = node(Kind::chars);
  n.chars = std::move(set);
  return n;
}

CodePointSet word_chars() {
  CodePointSet set = CodePointSet::range('0', '9');
  set.add('A', 'Z');
  set.add('a', 'z');
  set.add('_', '_');
  return set;
}

CodePointSet space_chars() {
  CodePointSet set = CodePointSet::range('\t', '\r');  // \t \n \v \f \r
  set.add(' ', ' ');
  return set;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Parser {
 public:
  explicit Parser(std::string_view pattern) : p_(pattern) {}

  RegexNode parse() {
    RegexNode tree = parse_alt(0, true);
    if (!at_end()) fail("')' without a matching '('", pos_);
    return tree;
  }

 private:
  [[noreturn]] void fail(const std::string& what, size_t at) const {
    throw ConstraintError("regex: " + what + " at offset " + std::to_string(at));
  }
  bool at_end() const { return pos_ >= p_.size(); }
  char peek() const { return p_[pos_]; }
  bool next_is(std::string_view s) const { return p_.substr(pos_, s.size()) == s; }

  RegexNode parse_alt(int depth, bool at_start) {
    RegexNode alt = node(Kind::alt);
    alt.children.push_back(parse_concat(depth, at_start));
    while (!at_end() && peek() == '|') {
      ++pos_;
      alt.children.push_back(parse_concat(depth, at_start));
    }
    if (alt.children.size() == 1) return std::move(alt.children[0]);
    return alt;
  }

  RegexNode parse_concat(int depth, bool at_start) {
    RegexNode seq = node(Kind::concat);
    while (!at_end() && peek() != '|' && peek() != ')') {
      const size_t start = pos_;
      if (peek() == '^') {
        if (!at_start || !seq.children.empty()) fail("anchor ^ not at the pattern's start", start);
        ++pos_;
        ++anchors_;
        continue;
      }
      if (peek() == '$') {
        ++pos_;
        if (!end_follows(depth)) fail("anchor $ not at the pattern's end", start);
        ++anchors_;
        continue;
      }
      const int anchors_before = anchors_;
      RegexNode atom = parse_atom(depth, at_start && seq.children.empty());
      if (!at_end() && quantifier_follows()) {
        if (anchors_ != anchors_before) fail("quantifier on a group holding an anchor", pos_);
        atom = parse_quantifier(std::move(atom));
      }
      seq.children.push_back(std::move(atom));
    }
    return seq;
  }

  // After a `$`: only the ends of enclosing groups (and more `$`) may follow, or at the top level
  // another alternative.
  bool end_follows(int depth) const {
    size_t i = pos_;
    while (i < p_.size() && (p_[i] == ')' || p_[i] == '$')) ++i;
    return i == p_.size() || (depth == 0 && i == pos_ && p_[i] == '|');
  }

  RegexNode parse_atom(int depth, bool at_start) {
    const size_t start = pos_;
    const char c = peek();
    switch (c) {
      case '(':
        return parse_group(depth, at_start);
      case '[':
        return chars_node(parse_class());
      case '.':
        ++pos_;
        return chars_node(CodePointSet::of('\n').complement());
      case '\\':
        return chars_node(parse_escape(false));
      case '*':
      case '+':
      case '?':
        fail(std::string("quantifier '") + c + "' with nothing to repeat", start);
      case '{':
        if (quantifier_follows()) fail("quantifier '{' with nothing to repeat", start);
        break;
      default:
        break;
    }
    return chars_node(CodePointSet::of(code_point()));
  }

  char32_t code_point() {
    const size_t start = pos_;
    const long c = decode_utf8(p_, pos_);
    if (c < 0) fail("bytes that are not UTF-8", start);
    return static_cast<char32_t>(c);
  }

  RegexNode parse_group(int depth, bool at_start) {
    const size_t open = pos_++;
    if (depth + 1 > kMaxGroupDepth) {
      fail("groups nested deeper than " + std::to_string(kMaxGroupDepth), open);
    }
    if (next_is("?")) {
      if (next_is("?:")) {
        pos_ += 2;
      } else if (next_is("?=") || next_is("?!")) {
        fail("lookahead " + std::string(p_.substr(open, 3)) + "...)", open);
      } else if (next_is("?<=") || next_is("?<!")) {
        fail("lookbehind " + std::string(p_.substr(open, 4)) + "...)", open);
      } else if (next_is("?P=")) {
        fail("backreference (?P=...)", open);
      } else if (next_is("?P<") || next_is("?<")) {
        const size_t close = p_.find('>', pos_);
        if (close == std::string_view::npos) fail("unclosed group name", open);
        pos_ = close + 1;
      } else {
        fail("inline flags or group extension (?...)", open);
      }
    }
    RegexNode inner = parse_alt(depth + 1, at_start);
    if (at_end() || peek() != ')') fail("'(' without a matching ')'", open);
    ++pos_;
    return inner;
  }

  // Whether a quantifier starts at pos_ (`{` counts only when a well-formed bound follows, as in
  // both flavours a lone `{` is a literal).
  bool quantifier_follows() const {
    const char c = peek();
    if (c == '*' || c == '+' || c == '?') return true;
    if (c != '{') return false;
    size_t i = pos_ + 1;
    const size_t digits_start = i;
    while (i < p_.size() && p_[i] >= '0' && p_[i] <= '9') ++i;
    bool digits = i > digits_start;
    if (i < p_.size() && p_[i] == ',') {
      ++i;
      const size_t second = i;
      while (i < p_.size() && p_[i] >= '0' && p_[i] <= '9') ++i;
      digits = digits || i > second;
    }
    return digits && i < p_.size() && p_[i] == '}';
  }

  int parse_bound() {
    const size_t start = pos_;
    long value = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      value = value * 10 + (peek() - '0');
      if (value > kMaxRepeat) fail("repetition bound above " + std::to_string(kMaxRepeat), start);
      ++pos_;
    }
    return static_cast<int>(value);
  }

  RegexNode parse_quantifier(RegexNode atom) {
    const size_t start = pos_;
    RegexNode rep = node(Kind::repeat);
    const char c = peek();
    if (c == '*') {
      rep.min = 0, rep.max = -1, ++pos_;
    } else if (c == '+') {
      rep.min = 1, rep.max = -1, ++pos_;
    } else if (c == '?') {
      rep.min = 0, rep.max = 1, ++pos_;
    } else {
      ++pos_;  // '{'
      rep.min = parse_bound();
      rep.max = rep.min;
      if (peek() == ',') {
        ++pos_;
        rep.max = peek() == '}' ? -1 : parse_bound();
      }
      ++pos_;  // '}'
      if (rep.max != -1 && rep.max < rep.min) fail("repetition {m,n} with n < m", start);
    }
    if (!at_end() && peek() == '?') {
      ++pos_;  // lazy: the same language
    } else if (!at_end() && peek() == '+') {
      fail("possessive quantifier", pos_);
    }
    if (!at_end() && quantifier_follows()) fail("quantifier on a quantifier", pos_);
    rep.children.push_back(std::move(atom));
    return rep;
  }

  CodePointSet parse_class() {
    const size_t open = pos_++;
    bool negated = false;
    if (!at_end() && peek() == '^') {
      negated = true;
      ++pos_;
    }
    CodePointSet set;
    bool first = true;
    while (true) {
      if (at_end()) fail("'[' without a matching ']'", open);
      if (peek() == ']' && !first) break;
      first = false;
      const size_t item = pos_;
      CodePointSet low = class_item();
      if (!at_end() && peek() == '-' && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        const size_t high_at = pos_;
        CodePointSet high = class_item();
        if (!low.single() || !high.single()) fail("range with a class escape as its end", item);
        const char32_t a = low.ranges()[0].first;
        const char32_t b = high.ranges()[0].first;
        if (a > b) fail("range out of order", high_at);
        set.add(a, b);
      } else {
        set.add(low);
      }
    }
    ++pos_;  // ']'
    return negated ? set.complement() : set;
  }

  CodePointSet class_item() {
    if (peek() == '\\') return parse_escape(true);
    return CodePointSet::of(code_point());
  }

  char32_t hex_digits(size_t count, size_t start) {
    char32_t value = 0;
    for (size_t i = 0; i < count; ++i) {
      const int d = at_end() ? -1 : hex_value(peek());
      if (d < 0) fail("escape with too few hex digits", start);
      value = value * 16 + static_cast<char32_t>(d);
      ++pos_;
    }
    return value;
  }

  char32_t unicode_escape(size_t start) {
    if (!at_end() && peek() == '{') {  // \u{...}
      ++pos_;
      char32_t value = 0;
      size_t digits = 0;
      while (!at_end() && peek() != '}') {
        const int d = hex_value(peek());
        if (d < 0 || ++digits > 6) fail("bad \\u{...} escape", start);
        value = value * 16 + static_cast<char32_t>(d);
        ++pos_;
      }
      if (at_end() || digits == 0) fail("bad \\u{...} escape", start);
      ++pos_;
      return value;
    }
    char32_t value = hex_digits(4, start);
    if (value >= 0xD800 && value <= 0xDBFF && next_is("\\u")) {  // a UTF-16 surrogate pair
      pos_ += 2;
      const char32_t low = hex_digits(4, start);
      if (low < 0xDC00 || low > 0xDFFF) fail("unpaired surrogate escape", start);
      value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00);
    }
    return value;
  }

  CodePointSet parse_escape(bool in_class) {
    const size_t start = pos_++;
    if (at_end()) fail("'\\' at the end of the pattern", start);
    const char c = peek();
    ++pos_;
    switch (c) {
      case 'd':
        return CodePointSet::range('0', '9');
      case 'D':
        return CodePointSet::range('0', '9').complement();
      case 'w':
        return word_chars();
      case 'W':
        return word_chars().complement();
      case 's':
        return space_chars();
      case 'S':
        return space_chars().complement();
      case 't':
        return CodePointSet::of('\t');
      case 'n':
        return CodePointSet::of('\n');
      case 'r':
        return CodePointSet::of('\r');
      case 'f':
        return CodePointSet::of('\f');
      case 'v':
        return CodePointSet::of('\v');
      case '0':
        if (!at_end() && peek() >= '0' && peek() <= '9') fail("octal escape", start);
        return CodePointSet::of(0);
      case 'x':
        return CodePointSet::of(hex_digits(2, start));
      case 'u': {
        const char32_t value = unicode_escape(start);
        if (value > kMaxCodePoint || (value >= 0xD800 && value <= 0xDFFF)) {
          fail("escape of a surrogate or beyond U+10FFFF", start);
        }
        return CodePointSet::of(value);
      }
      case 'U': {
        const char32_t value = hex_digits(8, start);
        if (value > kMaxCodePoint || (value >= 0xD800 && value <= 0xDFFF)) {
          fail("escape of a surrogate or beyond U+10FFFF", start);
        }
        return CodePointSet::of(value);
      }
      case 'b':
        if (in_class) return CodePointSet::of('\b');
        fail("word boundary \\b", start);
      case 'B':
      case 'A':
      case 'Z':
      case 'z':
      case 'G':
        fail(std::string("anchor or boundary \\") + c, start);
      case 'k':
        fail("backreference \\k", start);
      case 'p':
      case 'P':
        fail(std::string("Unicode property \\") + c, start);
      default:
        break;
    }
    if (c >= '1' && c <= '9') fail(std::string("backreference \\") + c, start);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      fail(std::string("unknown escape \\") + c, start);
    }
    --pos_;
    return CodePointSet::of(code_point());  // an escaped punctuation or other character
  }

  std::string_view p_;
  size_t pos_ = 0;
  int anchors_ = 0;
};

// Rewrites a tree (children already rewritten) so that nothing-matching and empty parts are gone
// and no repetition repeats something that can be empty.
class Simplifier {
 public:
  RegexNode simplify(RegexNode n) {
    count();
    for (auto& child : n.children) child = simplify(std::move(child));
    switch (n.kind) {
      case Kind::chars:
        return n.chars.empty() ? node(Kind::nothing) : n;
      case Kind::concat:
        return make_concat(std::move(n.children));
      case Kind::alt:
        return make_alt(std::move(n.children));
      case Kind::repeat: {
        RegexNode& child = n.children[0];
        if (n.max == 0 || child.kind == Kind::empty) return node(Kind::empty);
        if (child.kind == Kind::nothing) return node(n.min == 0 ? Kind::empty : Kind::nothing);
        if (nullable(child)) {
          // Up to max copies of a possibly empty part = up to max non-empty copies of it.
          RegexNode part = non_empty(child);
          if (part.kind == Kind::nothing) return node(Kind::empty);
          n.children[0] = std::move(part);
          n.min = 0;
        }
        if (n.min == 1 && n.max == 1) return std::move(n.children[0]);
        return n;
      }
      default:
        return n;
    }
  }

 private:
  void count(size_t nodes = 1) {
    nodes_ += nodes;
    if (nodes_ > kMaxNodes) throw ConstraintError("regex: pattern too complex to convert");
  }

  static size_t tree_size(const RegexNode& n) {
    size_t size = 1;
    for (const auto& c : n.children) size += tree_size(c);
    return size;
  }

  static bool nullable(const RegexNode& n) {
    switch (n.kind) {
      case Kind::empty:
        return true;
      case Kind::nothing:
      case Kind::chars:
        return false;
      case Kind::concat:
        for (const auto& c : n.children) {
          if (!nullable(c)) return false;
        }
        return true;
      case Kind::alt:
        for (const auto& c : n.children) {
          if (nullable(c)) return true;
        }
        return false;
      case Kind::repeat:
        return n.min == 0 || nullable(n.children[0]);
    }
    return false;
  }

  RegexNode make_concat(std::vector<RegexNode> parts) {
    RegexNode seq = node(Kind::concat);
    for (auto& p : parts) {
      if (p.kind == Kind::nothing) return node(Kind::nothing);
      if (p.kind == Kind::empty) continue;
      if (p.kind == Kind::concat) {
        for (auto& q : p.children) seq.children.push_back(std::move(q));
      } else {
        seq.children.push_back(std::move(p));
      }
    }
    if (seq.children.empty()) return node(Kind::empty);
    if (seq.children.size() == 1) return std::move(seq.children[0]);
    return seq;
  }

  RegexNode make_alt(std::vector<RegexNode> parts) {
    RegexNode alt = node(Kind::alt);
    for (auto& p : parts) {
      if (p.kind == Kind::nothing) continue;
      if (p.kind == Kind::alt) {
        for (auto& q : p.children) alt.children.push_back(std::move(q));
      } else {
        alt.children.push_back(std::move(p));
      }
    }
    if (alt.children.empty()) return node(Kind::nothing);
    if (alt.children.size() == 1) return std::move(alt.children[0]);
    return alt;
  }

  // The strings of `n` (simplified) but the empty one.
  RegexNode non_empty(const RegexNode& n) {
    count();
    switch (n.kind) {
      case Kind::empty:
      case Kind::nothing:
        return node(Kind::nothing);
      case Kind::chars:
        return n;
      case Kind::alt: {
        std::vector<RegexNode> parts;
        for (const auto& c : n.children) parts.push_back(non_empty(c));
        return make_alt(std::move(parts));
      }
      case Kind::concat: {
        // The first non-empty part decides: the parts before it were empty.
        std::vector<RegexNode> options;
        for (size_t i = 0; i < n.children.size(); ++i) {
          std::vector<RegexNode> seq;
          seq.push_back(non_empty(n.children[i]));
          for (size_t j = i + 1; j < n.children.size(); ++j) {
            count(tree_size(n.children[j]));
            seq.push_back(n.children[j]);
          }
          options.push_back(make_concat(std::move(seq)));
          if (!nullable(n.children[i])) break;
        }
        return make_alt(std::move(options));
      }
      case Kind::repeat: {
        count(tree_size(n));
        if (n.min >= 1) return n;  // its child cannot be empty (simplified)
        RegexNode rep = n;
        rep.min = 1;
        if (rep.max == 1) return std::move(rep.children[0]);
        return rep;
      }
    }
    return node(Kind::nothing);
  }

  size_t nodes_ = 0;
};

}  // namespace

RegexNode parse_regex(std::string_view pattern) {
  return Simplifier().simplify(Parser(pattern).parse());
}

}  // namespace dq4::constrain
