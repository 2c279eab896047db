#include "lexer.h"

#include <algorithm>
#include <cctype>

#include "dq4/kernels/error.h"
#include "text.h"

namespace dq4::jinja {

std::string describe(const Location& location) {
  return "line " + std::to_string(location.line) + ", column " + std::to_string(location.column);
}

namespace {

// Python's "\s" for the whitespace inside tags and around `-` modifiers.
size_t skip_whitespace(std::string_view s, size_t pos) {
  while (pos < s.size()) {
    const auto c = static_cast<unsigned char>(s[pos]);
    if (c < 0x80) {
      if (!is_python_space(c)) break;
      ++pos;
      continue;
    }
    const std::vector<char32_t> next =
        decode_utf8(s.substr(pos, std::min<size_t>(4, s.size() - pos)));
    if (next.empty() || !is_python_space(next[0])) break;
    std::string encoded;
    append_utf8(encoded, next[0]);
    pos += encoded.size();
  }
  return pos;
}

std::string rstrip_whitespace(std::string_view s) { return strip(s, StripSide::kRight, nullptr); }

// Jinja2 reads string literals with Python's unicode-escape codec.
std::string unescape(std::string_view body, const Location& at) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out += body[i];
      continue;
    }
    const char e = body[++i];
    auto hex_escape = [&](int digits) {
      if (i + digits >= body.size())
        throw Error("chat template " + describe(at) + ": truncated \\" + std::string(1, e) +
                    " escape in a string literal");
      char32_t c = 0;
      for (int k = 1; k <= digits; ++k) {
        const char h = body[i + k];
        if (!std::isxdigit(static_cast<unsigned char>(h)))
          throw Error("chat template " + describe(at) + ": bad \\" + std::string(1, e) +
                      " escape in a string literal");
        c = c * 16 +
            (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
      }
      if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        throw Error("chat template " + describe(at) + ": \\" + std::string(1, e) +
                    " escape names no character");
      append_utf8(out, c);
      i += digits;
    };
    switch (e) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case 'a':
        out += '\a';
        break;
      case '0':
        out += '\0';
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case '\n':
        break;  // line continuation
      case 'x':
        hex_escape(2);
        break;
      case 'u':
        hex_escape(4);
        break;
      case 'U':
        hex_escape(8);
        break;
      default:  // unknown escapes keep their backslash, as in Python
        out += '\\';
        out += e;
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    size_t pos = 0;
    bool line_starting = true;
    while (pos < src_.size()) {
      const size_t start = find_tag(pos);
      std::string text = src_.substr(pos, start - pos);
      if (start == src_.size()) {
        emit_text(std::move(text), pos);
        break;
      }
      const char kind = src_[start + 1];  // '{', '%' or '#'
      const char modifier = start + 2 < src_.size() ? src_[start + 2] : '\0';
      if (modifier == '-') {
        text = rstrip_whitespace(text);
      } else if (kind != '{' && modifier != '+') {
        // lstrip_blocks: a block or comment alone on its line takes its indentation with it.
        const size_t line_begin = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if ((line_begin > 0 || line_starting) &&
            text.find_first_not_of(" \t", line_begin) == std::string::npos)
          text.resize(line_begin);
      }
      emit_text(std::move(text), pos);
      pos = start + 2 + (modifier == '-' || modifier == '+' ? 1 : 0);
      if (kind == '#') {
        pos = skip_comment(start, pos);
      } else if (kind == '%' && is_raw_block(pos)) {
        pos = read_raw_block(start, pos);
      } else {
        pos = read_tag(start, pos, kind == '{');
      }
      line_starting = pos > 0 && src_[pos - 1] == '\n';
    }
    tokens_.push_back({TokenType::kEnd, "", locate(src_.size())});
    return std::move(tokens_);
  }

 private:
  Location locate(size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - 1;
    return {static_cast<int>(it - line_starts_.begin()) + 1, static_cast<int>(offset - *it) + 1};
  }

  [[noreturn]] void fail(size_t offset, const std::string& message) const {
    throw Error("chat template " + describe(locate(offset)) + ": " + message);
  }

  size_t find_tag(size_t pos) const {
    for (size_t i = pos; i + 1 < src_.size(); ++i)
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    return src_.size();
  }

  void emit_text(std::string text, size_t offset) {
    if (!text.empty()) tokens_.push_back({TokenType::kText, std::move(text), locate(offset)});
  }

  // After a tag's end: `-` strips all following whitespace; trim_blocks drops one newline after
  // a block or comment unless `+` says otherwise.
  size_t after_tag_end(size_t end_pos, char modifier, bool is_block) const {
    if (modifier == '-') return skip_whitespace(src_, end_pos);
    if (is_block && modifier != '+' && end_pos < src_.size() && src_[end_pos] == '\n')
      return end_pos + 1;
    return end_pos;
  }

  size_t skip_comment(size_t start, size_t pos) const {
    const size_t end = src_.find("#}", pos);
    if (end == std::string::npos) fail(start, "comment '{#' is never closed with '#}'");
    const char modifier =
        end > pos && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : '\0';
    return after_tag_end(end + 2, modifier, true);
  }

  // `pos` is just past "{%" and its modifier: is this {% raw %}?
  bool is_raw_block(size_t pos) const {
    const size_t name = skip_whitespace(src_, pos);
    if (src_.compare(name, 3, "raw") != 0) return false;
    const size_t after = name + 3;
    return after < src_.size() && !std::isalnum(static_cast<unsigned char>(src_[after])) &&
           src_[after] != '_';
  }

  size_t read_raw_block(size_t start, size_t pos) {
    size_t p = skip_whitespace(src_, skip_whitespace(src_, pos) + 3);
    char modifier = '\0';
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) modifier = src_[p++];
    if (src_.compare(p, 2, "%}") != 0) fail(start, "expected '%}' after 'raw'");
    p = after_tag_end(p + 2, modifier, true);
    // The body runs to the first {% endraw %}, whatever it contains.
    for (size_t i = p; (i = src_.find("{%", i)) != std::string::npos; i += 2) {
      size_t q = i + 2;
      const char open_modifier = q < src_.size() ? src_[q] : '\0';
      if (open_modifier == '-' || open_modifier == '+') ++q;
      q = skip_whitespace(src_, q);
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q = skip_whitespace(src_, q + 6);
      char close_modifier = '\0';
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) close_modifier = src_[q++];
      if (src_.compare(q, 2, "%}") != 0) continue;
      std::string body = src_.substr(p, i - p);
      if (open_modifier == '-') body = rstrip_whitespace(body);
      emit_text(std::move(body), p);
      return after_tag_end(q + 2, close_modifier, true);
    }
    fail(start, "'{% raw %}' is never closed with '{% endraw %}'");
  }

  // Reads the expression tokens of a {{ ... }} or {% ... %} tag up to its end at bracket depth 0.
  size_t read_tag(size_t start, size_t pos, bool is_variable) {
    tokens_.push_back(
        {is_variable ? TokenType::kVariableBegin : TokenType::kBlockBegin, "", locate(start)});
    const char* close = is_variable ? "}}" : "%}";
    std::string open_brackets;  // the tag ends only outside brackets, as in Jinja2
    while (true) {
      pos = skip_whitespace(src_, pos);
      if (pos >= src_.size())
        fail(start, std::string("tag opened here is never closed with '") + close + "'");
      const char c = src_[pos];
      if (open_brackets.empty()) {
        char modifier = '\0';
        size_t end = pos;
        if ((c == '-' || (c == '+' && !is_variable)) && src_.compare(pos + 1, 2, close) == 0) {
          modifier = c;
          ++end;
        }
        if (src_.compare(end, 2, close) == 0) {
          tokens_.push_back(
              {is_variable ? TokenType::kVariableEnd : TokenType::kBlockEnd, "", locate(pos)});
          return after_tag_end(end + 2, modifier, !is_variable);
        }
      }
      if (c == '{' || c == '(' || c == '[') open_brackets += c == '{' ? '}' : c == '(' ? ')' : ']';
      if (c == '}' || c == ')' || c == ']') {
        if (open_brackets.empty()) fail(pos, std::string("unexpected '") + c + "'");
        if (open_brackets.back() != c)
          fail(pos, std::string("unexpected '") + c + "', expected '" + open_brackets.back() + "'");
        open_brackets.pop_back();
      }
      pos = read_token(pos);
    }
  }

  size_t read_token(size_t pos) {
    const char c = src_[pos];
    const Location at = locate(pos);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = pos;
      while (end < src_.size() &&
             (std::isalnum(static_cast<unsigned char>(src_[end])) || src_[end] == '_'))
        ++end;
      tokens_.push_back({TokenType::kName, src_.substr(pos, end - pos), at});
      return end;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return read_number(pos);
    if (c == '\'' || c == '"') {
      size_t end = pos + 1;
      while (end < src_.size() && src_[end] != c) end += src_[end] == '\\' ? 2 : 1;
      if (end >= src_.size()) fail(pos, "string literal is never closed");
      tokens_.push_back({TokenType::kString,
                         unescape(std::string_view(src_).substr(pos + 1, end - pos - 1), at), at});
      return end + 1;
    }
    static const char* const kOperators[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*",
                                             "/",  "%",  "~",  "<",  ">",  "=",  "(", ")", "[",
                                             "]",  "{",  "}",  ",",  ".",  ":",  "|"};
    for (const char* op : kOperators) {
      const size_t n = std::char_traits<char>::length(op);
      if (src_.compare(pos, n, op) == 0) {
        tokens_.push_back({TokenType::kOperator, op, at});
        return pos + n;
      }
    }
    fail(pos, "unexpected character '" + std::string(1, c) + "' in a tag");
  }

  size_t digits(size_t pos) const {
    while (pos < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos])) ||
                                 (src_[pos] == '_' && pos + 1 < src_.size() &&
                                  std::isdigit(static_cast<unsigned char>(src_[pos + 1])))))
      ++pos;
    return pos;
  }

  size_t read_number(size_t pos) {
    size_t end = digits(pos);
    bool is_float = false;
    // No fraction right after a '.', so that `items.0.1` is two subscripts.
    const bool after_dot = !tokens_.empty() && tokens_.back().type == TokenType::kOperator &&
                           tokens_.back().text == ".";
    if (!after_dot) {
      if (end + 1 < src_.size() && src_[end] == '.' &&
          std::isdigit(static_cast<unsigned char>(src_[end + 1]))) {
        end = digits(end + 1);
        is_float = true;
      }
      if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
        size_t e = end + 1;
        if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
        if (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) {
          end = digits(e);
          is_float = true;
        }
      }
    }
    std::string text = src_.substr(pos, end - pos);
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    tokens_.push_back({is_float ? TokenType::kFloat : TokenType::kInteger, text, locate(pos)});
    return end;
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  return out;
}

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  if (!is_valid_utf8(source)) throw Error("chat template: not valid UTF-8");
  std::string text = normalize_newlines(source);
  if (!text.empty() && text.back() == '\n') text.pop_back();  // keep_trailing_newline=False
  return Lexer(std::move(text)).run();
}

}  // namespace dq4::jinja
