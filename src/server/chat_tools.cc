#include "chat_tools.h"

#include "api_error.h"

namespace dq4::server {
namespace {

using nlohmann::json;

constexpr int kMaxArgumentsDepth = 64;

[[noreturn]] void reject_field(const std::string& field, const std::string& message) {
  throw bad_request(field, "'" + field + "' " + message);
}

// OpenAI's rule for function names.
bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-'))
      return false;
  return true;
}

ToolFunction read_tool(const json& tool, const std::string& where) {
  if (!tool.is_object()) reject_field(where, "must be an object");
  for (auto it = tool.begin(); it != tool.end(); ++it)
    if (it.key() != "type" && it.key() != "function")
      reject_field(where + "." + it.key(), "is not a tool field");
  if (tool.value("type", json("function")) != "function")
    reject_field(where + ".type", "must be \"function\"");
  const auto function = tool.find("function");
  if (function == tool.end() || !function->is_object())
    reject_field(where + ".function", "must be an object");
  const std::string at = where + ".function";
  ToolFunction f;
  const auto name = function->find("name");
  if (name == function->end() || !name->is_string() || !valid_name(name->get<std::string>()))
    reject_field(at + ".name", "must be 1 to 64 letters, digits, '_' or '-'");
  f.name = name->get<std::string>();
  if (const auto d = function->find("description");
      d != function->end() && !d->is_string() && !d->is_null())
    reject_field(at + ".description", "must be a string");
  if (const auto s = function->find("strict");
      s != function->end() && !s->is_boolean() && !s->is_null())
    reject_field(at + ".strict", "must be a boolean");
  const auto parameters = function->find("parameters");
  if (parameters == function->end() || parameters->is_null()) {
    // OpenAI: leaving parameters out defines a function without any.
    f.parameters = {
        {"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}};
  } else {
    if (!parameters->is_object()) reject_field(at + ".parameters", "must be a JSON schema object");
    f.parameters = *parameters;
  }
  return f;
}

}  // namespace

ChatTools read_chat_tools(const json& body) {
  ChatTools t;
  const auto tools = body.find("tools");
  if (tools != body.end() && !tools->is_null()) {
    if (!tools->is_array()) reject_field("tools", "must be an array of tools");
    for (size_t i = 0; i < tools->size(); ++i) {
      t.functions.push_back(read_tool((*tools)[i], "tools[" + std::to_string(i) + "]"));
      for (size_t j = 0; j < i; ++j)
        if (t.functions[j].name == t.functions[i].name)
          reject_field("tools[" + std::to_string(i) + "].function.name",
                       "repeats the function name '" + t.functions[i].name + "'");
    }
  }
  if (const auto p = body.find("parallel_tool_calls"); p != body.end() && !p->is_null()) {
    if (!p->is_boolean()) reject_field("parallel_tool_calls", "must be a boolean");
    t.parallel_tool_calls = p->get<bool>();
  }
  t.choice = t.functions.empty() ? ChatTools::Choice::none : ChatTools::Choice::automatic;
  const auto choice = body.find("tool_choice");
  if (choice == body.end() || choice->is_null()) return t;
  if (choice->is_string()) {
    const std::string c = choice->get<std::string>();
    if (c == "none") {
      t.choice = ChatTools::Choice::none;
    } else if (c == "auto") {
      // Without tools there is nothing to call: as "none".
    } else if (c == "required") {
      if (t.functions.empty()) reject_field("tool_choice", "\"required\" needs 'tools'");
      t.choice = ChatTools::Choice::required;
    } else {
      reject_field("tool_choice", "must be \"none\", \"auto\", \"required\" or a named function");
    }
    return t;
  }
  const auto function = choice->is_object() ? choice->find("function") : choice->end();
  if (!choice->is_object() || choice->value("type", json("function")) != "function" ||
      function == choice->end() || !function->is_object() || !function->contains("name") ||
      !(*function)["name"].is_string())
    reject_field(
        "tool_choice",
        "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": "
        "{\"name\": ...}}");
  t.named = (*function)["name"].get<std::string>();
  bool known = false;
  for (const ToolFunction& f : t.functions) known = known || f.name == t.named;
  if (!known)
    reject_field("tool_choice.function.name",
                 "names '" + t.named + "', which is not among 'tools'");
  t.choice = ChatTools::Choice::named;
  return t;
}

void prepare_tool_message(json& message, const std::string& where) {
  const std::string role = message.value("role", "");
  if (role == "tool") {
    const auto id = message.find("tool_call_id");
    if (id != message.end() && !id->is_string() && !id->is_null())
      reject_field(where + ".tool_call_id", "must be a string");
    return;
  }
  const auto calls = message.find("tool_calls");
  if (calls == message.end() || calls->is_null()) return;
  if (role != "assistant")
    reject_field(where + ".tool_calls", "is only allowed in assistant messages");
  if (!calls->is_array()) reject_field(where + ".tool_calls", "must be an array");
  for (size_t i = 0; i < calls->size(); ++i) {
    const std::string at = where + ".tool_calls[" + std::to_string(i) + "]";
    json& call = (*calls)[i];
    if (!call.is_object()) reject_field(at, "must be an object");
    if (const auto id = call.find("id"); id != call.end() && !id->is_string())
      reject_field(at + ".id", "must be a string");
    if (call.value("type", json("function")) != "function")
      reject_field(at + ".type", "must be \"function\"");
    const auto function = call.find("function");
    if (function == call.end() || !function->is_object())
      reject_field(at + ".function", "must be an object");
    const auto name = function->find("name");
    if (name == function->end() || !name->is_string())
      reject_field(at + ".function.name", "must be a string");
    auto arguments = function->find("arguments");
    if (arguments == function->end() || !arguments->is_string())
      reject_field(at + ".function.arguments", "must be a string of JSON");
    json parsed;
    try {
      parsed =
          json::parse(arguments->get<std::string>(), [&at](int depth, json::parse_event_t, json&) {
            if (depth > kMaxArgumentsDepth)
              reject_field(at + ".function.arguments", "is nested too deeply");
            return true;
          });
    } catch (const json::exception&) {
      reject_field(at + ".function.arguments", "is not valid JSON");
    }
    if (!parsed.is_object()) reject_field(at + ".function.arguments", "must be a JSON object");
    *arguments = std::move(parsed);
  }
  if (!calls->empty() && message.value("content", json()).is_null()) message["content"] = "";
}

}  // namespace dq4::server
