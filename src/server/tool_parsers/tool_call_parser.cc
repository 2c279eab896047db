#include "tool_call_parser.h"

#include "json_scan.h"

namespace dq4::server {
namespace {

using tool_parsers::decode_string;
using tool_parsers::marker_arriving;
using tool_parsers::partial_marker_suffix;
using tool_parsers::scan_value;
using tool_parsers::ScanStatus;
using tool_parsers::skip_whitespace;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]";
constexpr std::string_view kMistralArgs = "[ARGS]";

bool text_has(std::string_view text, size_t pos, std::string_view marker) {
  return text.substr(pos, marker.size()) == marker;
}

size_t trim_whitespace_end(std::string_view text, size_t end) {
  while (end > 0 && (text[end - 1] == ' ' || text[end - 1] == '\n' || text[end - 1] == '\t' ||
                     text[end - 1] == '\r'))
    --end;
  return end;
}

// A call object {"name": "...", "arguments": {...}} ("parameters" too) at `pos`.
struct CallObject {
  ScanStatus status = ScanStatus::partial;
  size_t end = 0;
  std::optional<std::string> name;
  bool has_arguments = false;
  size_t arguments_begin = 0, arguments_end = 0;
};

CallObject scan_call_object(std::string_view s, size_t pos) {
  CallObject c;
  const auto invalid = [&] {
    c.status = ScanStatus::invalid;
    return c;
  };
  if (pos >= s.size()) return c;
  if (s[pos] != '{') return invalid();
  size_t i = skip_whitespace(s, pos + 1);
  for (;;) {
    if (i >= s.size()) return c;
    if (s[i] != '"') return invalid();
    const auto key_scan = scan_value(s, i);
    if (key_scan.status == ScanStatus::partial) return c;
    const std::optional<std::string> key = decode_string(s, i, key_scan.end);
    if (key_scan.status == ScanStatus::invalid || !key) return invalid();
    i = skip_whitespace(s, key_scan.end);
    if (i >= s.size()) return c;
    if (s[i] != ':') return invalid();
    i = skip_whitespace(s, i + 1);
    if (i >= s.size()) return c;
    const auto value = scan_value(s, i);
    if (value.status == ScanStatus::invalid) return invalid();
    if (*key == "name") {
      if (value.status == ScanStatus::partial) return c;
      c.name = decode_string(s, i, value.end);
      if (!c.name || c.name->empty()) return invalid();
    } else if (*key == "arguments" || *key == "parameters") {
      if (c.has_arguments || s[i] != '{') return invalid();
      c.has_arguments = true;
      c.arguments_begin = i;
      c.arguments_end = value.end;
      if (value.status == ScanStatus::partial) return c;
    } else if (value.status == ScanStatus::partial) {
      return c;
    }
    i = skip_whitespace(s, value.end);
    if (i >= s.size()) return c;
    if (s[i] == '}') break;
    if (s[i] != ',') return invalid();
    i = skip_whitespace(s, i + 1);
  }
  if (!c.name || !c.has_arguments) return invalid();
  c.status = ScanStatus::complete;
  c.end = i + 1;
  return c;
}

class Scanner {
 public:
  Scanner(std::string_view text, bool at_end) : s_(text), at_end_(at_end) {}

  ToolScan failed() {
    out_.failed = true;
    return std::move(out_);
  }
  ToolScan done() { return std::move(out_); }

  // Content before the first `marker`: its position, or npos (all content, less what may be
  // the marker's start or whitespace before a call while more text may come).
  size_t leading_content(std::string_view marker) {
    const size_t first = s_.find(marker);
    size_t end = first;
    if (first == std::string_view::npos) {
      end = s_.size();
      if (!at_end_) end = trim_whitespace_end(s_, end - partial_marker_suffix(s_, marker));
    } else {
      end = trim_whitespace_end(s_, first);
    }
    out_.content = std::string(s_.substr(0, end));
    out_.consumed = end;
    return first;
  }

  // Text after the calls: content.
  ToolScan trailing(size_t pos) {
    pos = skip_whitespace(s_, pos);
    out_.content += s_.substr(pos);
    out_.consumed = s_.size();
    return done();
  }

  // Records a call object scanned at `pos`; false when it is not complete.
  bool add_call(const CallObject& c, size_t pos) {
    if (c.status == ScanStatus::complete) {
      out_.calls.push_back({*c.name, arguments(c.arguments_begin, c.arguments_end), true});
      out_.consumed = c.end;
      return true;
    }
    if (c.name) {
      out_.calls.push_back(
          {*c.name, c.has_arguments ? arguments(c.arguments_begin, c.arguments_end) : "", false});
      out_.consumed = c.has_arguments ? c.arguments_end : pos;
    }
    return false;
  }
  void add_call(std::string name, size_t begin, size_t end, bool complete) {
    out_.calls.push_back({std::move(name), arguments(begin, end), complete});
    out_.consumed = end;
  }

  std::string_view s_;
  bool at_end_;

 private:
  std::string arguments(size_t begin, size_t end) const {
    return std::string(s_.substr(begin, end - begin));
  }
  ToolScan out_;
};

ToolScan scan_hermes(std::string_view s, bool at_end) {
  Scanner scan(s, at_end);
  size_t pos = scan.leading_content(kHermesOpen);
  if (pos == std::string_view::npos) return scan.done();
  for (;;) {
    const size_t start = skip_whitespace(s, pos + kHermesOpen.size());
    const CallObject c = scan_call_object(s, start);
    if (c.status == ScanStatus::invalid) return scan.failed();
    if (!scan.add_call(c, start)) return at_end ? scan.failed() : scan.done();
    pos = skip_whitespace(s, c.end);
    if (pos == s.size()) return scan.done();  // the closing tag may be left out at the end
    if (text_has(s, pos, kHermesClose))
      pos += kHermesClose.size();
    else if (!at_end && marker_arriving(s, pos, kHermesClose))
      return scan.done();
    else
      return scan.failed();
    pos = skip_whitespace(s, pos);
    if (text_has(s, pos, kHermesOpen)) continue;
    if (pos == s.size() || (!at_end && marker_arriving(s, pos, kHermesOpen))) return scan.done();
    return scan.trailing(pos);
  }
}

ToolScan scan_llama3_json(std::string_view s, bool at_end) {
  Scanner scan(s, at_end);
  size_t pos = skip_whitespace(s, 0);
  if (text_has(s, pos, kPythonTag))
    pos = skip_whitespace(s, pos + kPythonTag.size());
  else if (!at_end && marker_arriving(s, pos, kPythonTag))
    return scan.done();
  if (!at_end && pos == s.size()) return scan.done();
  if (pos == s.size() || s[pos] != '{') return scan.trailing(0);  // a plain answer
  for (;;) {
    const CallObject c = scan_call_object(s, pos);
    if (c.status == ScanStatus::invalid) return scan.failed();
    if (!scan.add_call(c, pos)) return at_end ? scan.failed() : scan.done();
    pos = skip_whitespace(s, c.end);
    if (pos == s.size()) return scan.done();
    if (s[pos] != ';') return scan.failed();
    pos = skip_whitespace(s, pos + 1);
    if (pos == s.size()) return at_end ? scan.failed() : scan.done();
    if (s[pos] != '{') return scan.failed();
  }
}

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

ToolScan scan_mistral(std::string_view s, bool at_end) {
  Scanner scan(s, at_end);
  size_t pos = scan.leading_content(kMistralCalls);
  if (pos == std::string_view::npos) return scan.done();
  pos = skip_whitespace(s, pos + kMistralCalls.size());
  if (pos == s.size()) return at_end ? scan.failed() : scan.done();
  if (s[pos] == '[') {  // [TOOL_CALLS][{"name": ..., "arguments": ...}, ...]
    pos = skip_whitespace(s, pos + 1);
    for (;;) {
      const CallObject c = scan_call_object(s, pos);
      if (c.status == ScanStatus::invalid) return scan.failed();
      if (!scan.add_call(c, pos)) return at_end ? scan.failed() : scan.done();
      pos = skip_whitespace(s, c.end);
      if (pos == s.size()) return at_end ? scan.failed() : scan.done();
      if (s[pos] == ']') return scan.trailing(pos + 1);
      if (s[pos] != ',') return scan.failed();
      pos = skip_whitespace(s, pos + 1);
    }
  }
  for (;;) {  // [TOOL_CALLS]name[ARGS]{...}, repeated
    size_t name_end = pos;
    while (name_end < s.size() && name_char(s[name_end])) ++name_end;
    if (name_end == s.size() || (!at_end && marker_arriving(s, name_end, kMistralArgs)))
      return at_end ? scan.failed() : scan.done();
    if (name_end == pos || !text_has(s, name_end, kMistralArgs)) return scan.failed();
    std::string name(s.substr(pos, name_end - pos));
    const size_t begin = skip_whitespace(s, name_end + kMistralArgs.size());
    if (begin == s.size()) {
      if (at_end) return scan.failed();
      scan.add_call(std::move(name), begin, begin, false);
      return scan.done();
    }
    if (s[begin] != '{') return scan.failed();
    const auto value = scan_value(s, begin);
    if (value.status == ScanStatus::invalid) return scan.failed();
    if (value.status == ScanStatus::partial) {
      if (at_end) return scan.failed();
      scan.add_call(std::move(name), begin, s.size(), false);
      return scan.done();
    }
    scan.add_call(std::move(name), begin, value.end, true);
    pos = skip_whitespace(s, value.end);
    if (text_has(s, pos, kMistralCalls)) {
      pos += kMistralCalls.size();
      continue;
    }
    if (pos == s.size() || (!at_end && marker_arriving(s, pos, kMistralCalls))) return scan.done();
    return scan.trailing(pos);
  }
}

}  // namespace

std::optional<ToolFormat> tool_format_from_name(std::string_view name) {
  if (name == "hermes") return ToolFormat::hermes;
  if (name == "llama3_json") return ToolFormat::llama3_json;
  if (name == "mistral") return ToolFormat::mistral;
  return std::nullopt;
}

const char* tool_format_name(ToolFormat format) {
  switch (format) {
    case ToolFormat::hermes:
      return "hermes";
    case ToolFormat::llama3_json:
      return "llama3_json";
    case ToolFormat::mistral:
      return "mistral";
    case ToolFormat::none:
      break;
  }
  return "none";
}

ToolFormat detect_tool_format(std::string_view source) {
  const auto has = [&](std::string_view marker) {
    return source.find(marker) != std::string_view::npos;
  };
  if (has(kHermesOpen)) return ToolFormat::hermes;
  if (has(kMistralCalls)) return ToolFormat::mistral;
  // Llama 3.1 / 3.2 templates announce "Environment: ipython" and the {"name", "parameters"} form.
  if (has(kPythonTag) || has("ipython") || has("\"parameters\"")) return ToolFormat::llama3_json;
  return ToolFormat::none;
}

ToolScan scan_tool_calls(ToolFormat format, std::string_view text, bool at_end) {
  switch (format) {
    case ToolFormat::hermes:
      return scan_hermes(text, at_end);
    case ToolFormat::llama3_json:
      return scan_llama3_json(text, at_end);
    case ToolFormat::mistral:
      return scan_mistral(text, at_end);
    case ToolFormat::none:
      break;
  }
  ToolScan all;
  all.content = std::string(text);
  all.consumed = text.size();
  return all;
}

ParsedToolOutput parse_tool_calls(ToolFormat format, std::string_view text) {
  ToolScan scan = scan_tool_calls(format, text, true);
  ParsedToolOutput out;
  if (scan.failed || scan.calls.empty()) {
    out.content = std::string(text);
    return out;
  }
  for (ToolScan::Call& call : scan.calls)
    out.calls.push_back({"", std::move(call.name), std::move(call.arguments)});
  if (skip_whitespace(scan.content, 0) < scan.content.size()) out.content = std::move(scan.content);
  return out;
}

ToolCallStream::ToolCallStream(ToolFormat format, std::function<std::string()> new_call_id)
    : format_(format), new_call_id_(std::move(new_call_id)) {}

ToolCallStream::Delta ToolCallStream::feed(std::string_view text) {
  text_ += text;
  return update(false);
}

ToolCallStream::Delta ToolCallStream::finish() { return update(true); }

ToolCallStream::Delta ToolCallStream::update(bool at_end) {
  Delta delta;
  if (!passthrough_) {
    const ToolScan scan = scan_tool_calls(format_, text_, at_end);
    if (!scan.failed) {
      delta.content = scan.content.substr(std::min(sent_content_, scan.content.size()));
      sent_content_ = std::max(sent_content_, scan.content.size());
      for (size_t i = 0; i < scan.calls.size(); ++i) {
        const ToolScan::Call& call = scan.calls[i];
        CallDelta d{i, "", "", ""};
        if (i == sent_arguments_.size()) {
          sent_arguments_.push_back(0);
          d.id = new_call_id_();
          d.name = call.name;
        }
        if (call.arguments.size() > sent_arguments_[i]) {
          d.arguments = call.arguments.substr(sent_arguments_[i]);
          sent_arguments_[i] = call.arguments.size();
        }
        if (!d.name.empty() || !d.arguments.empty()) delta.calls.push_back(std::move(d));
      }
      consumed_ = scan.consumed;
      return delta;
    }
    passthrough_ = true;
    // Before any call went out, the content sent is the text's beginning.
    if (sent_arguments_.empty()) consumed_ = sent_content_;
  }
  delta.content = text_.substr(std::min(consumed_, text_.size()));
  consumed_ = text_.size();
  return delta;
}

}  // namespace dq4::server
