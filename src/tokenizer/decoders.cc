#include "decoders.h"

#include "dq4/tokenizer/byte_level.h"
#include "pattern.h"
#include "utf8.h"

namespace dq4::tokenizer {
namespace {

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(const JsonNode& node) {
    const JsonNode list = node.at("decoders");
    for (size_t i = 0; i < list.size(); ++i) steps_.push_back(parse_decoder(list.at(i)));
  }
  void token_bytes(std::string& token) const override {
    for (const auto& step : steps_) step->token_bytes(token);
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

// Byte-level characters back to bytes (a token with any other character gives its own UTF-8),
// then all bytes as one string, invalid sequences replaced by U+FFFD.
class ByteLevelDecoder : public Decoder {
 public:
  void token_bytes(std::string& token) const override {
    std::string bytes;
    for (size_t pos = 0; pos < token.size();) {
      const int b = byte_level_byte(next_code_point(token, pos));
      if (b < 0) return;  // not all byte-level characters: the token's own UTF-8
      bytes.push_back(static_cast<char>(b));
    }
    token = std::move(bytes);
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) {
      const size_t mark = bytes.size();
      bool mapped = true;
      for (size_t pos = 0; pos < token.size() && mapped;) {
        const int b = byte_level_byte(next_code_point(token, pos));
        mapped = b >= 0;
        if (mapped) bytes.push_back(static_cast<char>(b));
      }
      if (!mapped) {
        bytes.resize(mark);
        bytes += token;
      }
    }
    tokens.assign(1, utf8_lossy(bytes));
  }
};

class MetaspaceDecoder : public Decoder {
 public:
  explicit MetaspaceDecoder(const JsonNode& node) {
    append_utf8(replacement_, node.at("replacement").as_char());
    if (node.has("prepend_scheme")) {
      const JsonNode scheme = node.at("prepend_scheme");
      const std::string name = scheme.as_string();
      if (name != "always" && name != "first" && name != "never")
        scheme.fail("unsupported prepend_scheme \"" + name + "\"");
      strip_first_ = name != "never";
    } else {
      strip_first_ = node.get_bool("add_prefix_space", true);
    }
  }
  void token_bytes(std::string& token) const override {
    token = replace_literal(token, replacement_, " ");
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      // The first token loses every replacement character, the others get spaces for them.
      const char* with = i == 0 && strip_first_ ? "" : " ";
      tokens[i] = replace_literal(tokens[i], replacement_, with);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class ByteFallbackDecoder : public Decoder {
 public:
  void token_bytes(std::string& token) const override {
    const int byte = parse_byte_token(token);
    if (byte >= 0) token.assign(1, static_cast<char>(byte));
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string bytes;
    size_t byte_count = 0;
    auto flush = [&] {
      if (byte_count == 0) return;
      if (find_invalid_utf8(bytes) == std::string::npos) {
        out.push_back(bytes);
      } else {
        for (size_t i = 0; i < byte_count; ++i) out.emplace_back("\xEF\xBF\xBD");
      }
      bytes.clear();
      byte_count = 0;
    };
    for (std::string& token : tokens) {
      const int byte = parse_byte_token(token);
      if (byte >= 0) {
        bytes.push_back(static_cast<char>(byte));
        ++byte_count;
      } else {
        flush();
        out.push_back(std::move(token));
      }
    }
    flush();
    tokens = std::move(out);
  }

 private:
  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  // "<0xAB>" -> 0xAB, else -1. Like Rust's u8::from_str_radix, a leading '+' is accepted.
  static int parse_byte_token(const std::string& token) {
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
    if (token[3] == '+') return hex(token[4]);
    const int high = hex(token[3]), low = hex(token[4]);
    return high < 0 || low < 0 ? -1 : high * 16 + low;
  }
};

class FuseDecoder : public Decoder {
 public:
  void token_bytes(std::string&) const override {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string joined;
    for (const std::string& token : tokens) joined += token;
    tokens.assign(1, std::move(joined));
  }
};

class StripDecoder : public Decoder {
 public:
  explicit StripDecoder(const JsonNode& node)
      : content_(node.at("content").as_char()),
        start_(count(node, "start")),
        stop_(count(node, "stop")) {}
  // Strips the text's ends only (it follows Fuse), never a token in the middle.
  void token_bytes(std::string&) const override {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) {
      std::vector<size_t> starts;  // byte offset of each character
      std::vector<char32_t> chars;
      for (size_t pos = 0; pos < token.size();) {
        starts.push_back(pos);
        chars.push_back(next_code_point(token, pos));
      }
      size_t first = 0;
      while (first < start_ && first < chars.size() && chars[first] == content_) ++first;
      size_t last = chars.size();
      for (size_t i = 0; i < stop_ && last > first && chars[last - 1] == content_; ++i) --last;
      const size_t begin = first < chars.size() ? starts[first] : token.size();
      const size_t end = last < chars.size() ? starts[last] : token.size();
      token = token.substr(begin, end - begin);
    }
  }

 private:
  static size_t count(const JsonNode& node, const char* key) {
    const JsonNode value = node.at(key);
    if (value.as_int() < 0) value.fail("expected a count >= 0");
    return static_cast<size_t>(value.as_int());
  }
  char32_t content_;
  size_t start_, stop_;
};

class ReplaceDecoder : public Decoder {
 public:
  explicit ReplaceDecoder(const JsonNode& node)
      : pattern_(node.at("pattern")), content_(node.get_string("content")) {}
  void token_bytes(std::string& token) const override {
    token = pattern_.replace_all(token, content_);
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) token = pattern_.replace_all(token, content_);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

}  // namespace

std::unique_ptr<Decoder> parse_decoder(const JsonNode& node) {
  const std::string type = node.type();
  if (type == "Sequence") return std::make_unique<SequenceDecoder>(node);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") return std::make_unique<MetaspaceDecoder>(node);
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") return std::make_unique<StripDecoder>(node);
  if (type == "Replace") return std::make_unique<ReplaceDecoder>(node);
  node.unsupported("decoder");
}

}  // namespace dq4::tokenizer
