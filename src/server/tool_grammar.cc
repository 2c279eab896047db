#include "tool_grammar.h"

#include "dq4/constrain/to_gbnf.h"

namespace dq4::server {
namespace {

// A GBNF string literal.
std::string literal(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

struct Shape {
  std::string open, close;    // around one call's JSON
  std::string separator;      // between parallel calls
  std::string before, after;  // around all calls
  const char* arguments_key;
};

Shape shape_of(ToolFormat format) {
  switch (format) {
    case ToolFormat::hermes:
      return {"<tool_call>\n", "\n</tool_call>", "\n", "", "", "arguments"};
    case ToolFormat::mistral:
      return {"", "", ", ", "[TOOL_CALLS][", "]", "arguments"};
    case ToolFormat::llama3_json:
    case ToolFormat::none:
      break;
  }
  return {"", "", "; ", "", "", "parameters"};
}

}  // namespace

std::string tool_call_grammar(ToolFormat format, const ChatTools& tools) {
  const Shape shape = shape_of(format);
  std::string grammar;
  std::string alternatives;
  for (size_t i = 0; i < tools.functions.size(); ++i) {
    const ToolFunction& f = tools.functions[i];
    if (tools.choice == ChatTools::Choice::named && f.name != tools.named) continue;
    const std::string prefix = "fn" + std::to_string(i) + "-";
    const std::string rule = "tool-fn" + std::to_string(i);
    grammar +=
        rule + " ::= " +
        literal(shape.open + "{\"name\": \"" + f.name + "\", \"" + shape.arguments_key + "\": ") +
        " " + prefix + "root " + literal("}" + shape.close) + "\n";
    grammar += constrain::json_schema_to_gbnf(f.parameters.dump(), prefix) + "\n";
    alternatives += (alternatives.empty() ? "" : " | ") + rule;
  }
  const bool several = tools.choice == ChatTools::Choice::required && tools.parallel_tool_calls;
  std::string root = "root ::= ";
  if (!shape.before.empty()) root += literal(shape.before) + " ";
  root += "tool-call";
  if (several) root += " (" + literal(shape.separator) + " tool-call)*";
  if (!shape.after.empty()) root += " " + literal(shape.after);
  return root + "\ntool-call ::= " + alternatives + "\n" + grammar;
}

}  // namespace dq4::server
