#pragma once
// Tool calls in a model's output, in the formats of the models dq4 runs (vLLM's parser names):
//   hermes       Hermes / Qwen2.5 / Qwen3: <tool_call>\n{"name": ..., "arguments":
//   {...}}\n</tool_call>
//                blocks, one after another;
//   llama3_json  Llama 3.1 / 3.2: the whole output is {"name": ..., "parameters": {...}} (or
//                "arguments"), after an optional <|python_tag|>, several joined by "; ";
//   mistral      [TOOL_CALLS] then a JSON array of {"name", "arguments"} objects, or the newer
//                [TOOL_CALLS]name[ARGS]{...} repeated.
// Text before the calls is the message's content (its trailing whitespace dropped), text after
// them is appended to it. Output that is not a well-formed call is content, as it stands.
// A call's arguments are the JSON text the model wrote.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dq4::server {

enum class ToolFormat { none, hermes, llama3_json, mistral };

// "hermes", "llama3_json", "mistral"; nullopt for another name.
std::optional<ToolFormat> tool_format_from_name(std::string_view name);
const char* tool_format_name(ToolFormat format);
// The format a chat template teaches its model, from the markers its source writes; none when
// it shows no tool-call format.
ToolFormat detect_tool_format(std::string_view template_source);

struct ToolCall {
  std::string id;  // filled in by the caller
  std::string name;
  std::string arguments;  // JSON text
};

struct ParsedToolOutput {
  std::optional<std::string> content;  // null when calls were found and no other text
  std::vector<ToolCall> calls;
};

// The whole output at once.
ParsedToolOutput parse_tool_calls(ToolFormat format, std::string_view text);

// What the output so far certainly holds: content, and calls whose names are known with the part
// of their arguments written so far. Each snapshot extends the one before for a longer text.
struct ToolScan {
  struct Call {
    std::string name;
    std::string arguments;
    bool complete = false;
  };
  std::string content;
  std::vector<Call> calls;
  size_t consumed = 0;  // the text up to here is accounted for by content and calls
  bool failed = false;  // not well-formed calls: the whole text is content
};
ToolScan scan_tool_calls(ToolFormat format, std::string_view text, bool at_end);

// The output as it streams: text goes in as the model writes it; content comes out, held back
// while it may be the start of a call, and calls come out as they are written: a call's id and
// name first, its arguments in fragments after. The fragments of a call join into the arguments
// parse_tool_calls finds in the whole text. Should a call turn out malformed after its start went
// out, the rest of the text comes out as content.
class ToolCallStream {
 public:
  struct CallDelta {
    size_t index = 0;
    std::string id, name;  // in a call's first delta only
    std::string arguments;
  };
  struct Delta {
    std::string content;
    std::vector<CallDelta> calls;
    bool empty() const { return content.empty() && calls.empty(); }
  };

  ToolCallStream(ToolFormat format, std::function<std::string()> new_call_id);
  Delta feed(std::string_view text);
  Delta finish();  // the output ended: whatever was held back
  bool has_calls() const { return !sent_arguments_.empty(); }

 private:
  Delta update(bool at_end);

  ToolFormat format_;
  std::function<std::string()> new_call_id_;
  std::string text_;
  size_t sent_content_ = 0;
  std::vector<size_t> sent_arguments_;  // per call started
  size_t consumed_ = 0;
  bool passthrough_ = false;  // after a malformed call: text is content
};

}  // namespace dq4::server
