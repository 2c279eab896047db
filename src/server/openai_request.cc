#include "openai_request.h"

#include <cmath>
#include <initializer_list>
#include <limits>
#include <set>

namespace dq4::server {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 64;
constexpr int64_t kMaxChoices = 128;  // OpenAI's limit on n
constexpr size_t kMaxPrompts = 64;    // prompts in one completions request
constexpr size_t kMaxStops = 16;      // stop strings
constexpr int64_t kMaxLogprobs = 20;  // top logprobs per token (vLLM's default max_logprobs)

std::string type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    default:
      return "a number";
  }
}

// Reads the fields of one JSON object, each at most once, with errors naming the field.
class Fields {
 public:
  Fields(const json& object, std::string prefix) : object_(object), prefix_(std::move(prefix)) {}

  std::string name(std::string_view key) const { return prefix_ + std::string(key); }
  [[noreturn]] void fail(std::string_view key, const std::string& message) const {
    throw bad_request(name(key), "'" + name(key) + "' " + message);
  }

  // Every key must be one of `known`, as OpenAI's API rejects unrecognized arguments.
  void only(const std::set<std::string_view>& known) const {
    for (auto it = object_.begin(); it != object_.end(); ++it)
      if (!known.count(it.key()))
        throw bad_request(name(it.key()),
                          "Unrecognized request argument supplied: " + name(it.key()));
  }

  const json* get(std::string_view key) const {  // nullptr when absent or null
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }

  std::optional<bool> boolean(std::string_view key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) fail(key, "must be a boolean, got " + type_name(*v));
    return v->get<bool>();
  }

  std::optional<std::string> string(std::string_view key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(key, "must be a string, got " + type_name(*v));
    return v->get<std::string>();
  }

  std::optional<double> number(std::string_view key, double lo, double hi) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) fail(key, "must be a number, got " + type_name(*v));
    const double x = v->get<double>();
    if (!(x >= lo && x <= hi))
      fail(key,
           "must be between " + json(lo).dump() + " and " + json(hi).dump() + ", got " + v->dump());
    return x;
  }

  // Whole numbers written as floats (2.0) are accepted, as OpenAI's validation does.
  std::optional<int64_t> integer(std::string_view key, int64_t lo, int64_t hi) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    const int64_t x = to_integer(*v, key);
    if (x < lo || x > hi)
      fail(key, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " +
                    std::to_string(x));
    return x;
  }

  int64_t to_integer(const json& v, std::string_view key) const {
    if (v.is_number_integer()) {
      if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
        fail(key, "is too large");
      return v.get<int64_t>();
    }
    if (v.is_number_float()) {
      const double x = v.get<double>();
      if (std::trunc(x) == x && std::fabs(x) < 9.0e18) return static_cast<int64_t>(x);
    }
    fail(key, "must be an integer, got " + (v.is_number() ? v.dump() : type_name(v)));
  }

  std::vector<TokenId> token_ids(const json& v, std::string_view key) const {
    if (!v.is_array()) fail(key, "must be an array of token ids, got " + type_name(v));
    std::vector<TokenId> ids;
    ids.reserve(v.size());
    for (const json& id : v) {
      const int64_t x = to_integer(id, key);
      if (x < 0 || x > std::numeric_limits<TokenId>::max())
        fail(key, "holds a token id out of range: " + std::to_string(x));
      ids.push_back(static_cast<TokenId>(x));
    }
    return ids;
  }

  const json& object() const { return object_; }

 private:
  const json& object_;
  std::string prefix_;
};

const std::set<std::string_view> kSharedKeys = {
    "model", "stream", "stream_options", "n", "max_tokens", "temperature", "top_p",
    "presence_penalty", "frequency_penalty", "seed", "stop", "user", "logit_bias",
    // vLLM's extra sampling parameters
    "top_k", "min_p", "repetition_penalty", "min_tokens", "ignore_eos", "stop_token_ids",
    "skip_special_tokens", "include_stop_str_in_output", "add_special_tokens"};

std::set<std::string_view> with_shared(std::initializer_list<std::string_view> keys) {
  std::set<std::string_view> all = kSharedKeys;
  all.insert(keys.begin(), keys.end());
  all.insert(structured_output_keys().begin(), structured_output_keys().end());
  return all;
}

// The output constraint, read again from the body only when a field for one is there.
std::optional<OutputConstraint> read_constraint(const json& object, std::string_view body) {
  for (std::string_view key : structured_output_keys())
    if (object.contains(key)) return read_output_constraint(body);
  return std::nullopt;
}

std::vector<std::string> read_stop(const Fields& f) {
  const json* v = f.get("stop");
  if (!v) return {};
  std::vector<std::string> stops;
  if (v->is_string()) {
    stops.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > kMaxStops) f.fail("stop", "holds more than 16 strings");
    for (const json& s : *v) {
      if (!s.is_string()) f.fail("stop", "must be a string or an array of strings");
      stops.push_back(s.get<std::string>());
    }
  } else {
    f.fail("stop", "must be a string or an array of strings, got " + type_name(*v));
  }
  for (const std::string& s : stops)
    if (s.empty()) f.fail("stop", "must not hold an empty string");
  return stops;
}

// The fields both endpoints share.
GenerationFields read_shared(const Fields& f) {
  GenerationFields g;
  Request& r = g.request;
  g.model = f.string("model").value_or("");
  g.stream = f.boolean("stream").value_or(false);
  if (const json* so = f.get("stream_options")) {
    if (!so->is_object()) f.fail("stream_options", "must be an object, got " + type_name(*so));
    if (!g.stream) f.fail("stream_options", "is only allowed when 'stream' is true");
    Fields options(*so, "stream_options.");
    options.only({"include_usage", "continuous_usage_stats"});
    g.include_usage = options.boolean("include_usage").value_or(false);
    options.boolean("continuous_usage_stats");
  }
  r.n = static_cast<int>(f.integer("n", 1, kMaxChoices).value_or(1));
  if (auto m = f.integer("max_tokens", 1, INT32_MAX)) r.max_tokens = *m;
  SamplingParams& s = r.sampling;
  s.temperature = static_cast<float>(f.number("temperature", 0, 2).value_or(1.0));
  s.top_p = static_cast<float>(f.number("top_p", 0, 1).value_or(1.0));
  if (s.top_p == 0) f.fail("top_p", "must be greater than 0");
  s.presence_penalty = static_cast<float>(f.number("presence_penalty", -2, 2).value_or(0));
  s.frequency_penalty = static_cast<float>(f.number("frequency_penalty", -2, 2).value_or(0));
  s.repetition_penalty = static_cast<float>(f.number("repetition_penalty", 0, 10).value_or(1));
  if (s.repetition_penalty == 0) f.fail("repetition_penalty", "must be greater than 0");
  s.top_k = static_cast<int>(f.integer("top_k", -1, INT32_MAX).value_or(0));
  s.min_p = static_cast<float>(f.number("min_p", 0, 1).value_or(0));
  if (auto seed = f.integer("seed", INT64_MIN, INT64_MAX)) s.seed = static_cast<uint64_t>(*seed);
  r.stop = read_stop(f);
  if (const json* ids = f.get("stop_token_ids"))
    r.stop_token_ids = f.token_ids(*ids, "stop_token_ids");
  r.min_tokens = f.integer("min_tokens", 0, INT32_MAX).value_or(0);
  r.ignore_eos = f.boolean("ignore_eos").value_or(false);
  r.skip_special_tokens = f.boolean("skip_special_tokens").value_or(true);
  r.include_stop_str_in_output = f.boolean("include_stop_str_in_output").value_or(false);
  f.string("user");
  if (const json* bias = f.get("logit_bias")) {
    if (!bias->is_object()) f.fail("logit_bias", "must be an object, got " + type_name(*bias));
    if (!bias->empty()) f.fail("logit_bias", "is not supported by this server");
  }
  return g;
}

json parse_object(std::string_view body) {
  json value;
  try {
    value = json::parse(body, [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxDepth) throw bad_request("", "the JSON body is nested too deeply");
      return true;
    });
  } catch (const json::exception& e) {
    throw bad_request("", std::string("the body is not valid JSON: ") + e.what());
  }
  if (!value.is_object()) throw bad_request("", "the body must be a JSON object");
  return value;
}

Prompt read_prompt_item(const Fields& f, const json& item) {
  if (item.is_string()) return item.get<std::string>();
  return f.token_ids(item, "prompt");
}

std::vector<Prompt> read_prompts(const Fields& f) {
  const json* v = f.get("prompt");
  if (!v) f.fail("prompt", "is required");
  std::vector<Prompt> prompts;
  if (v->is_string()) {
    prompts.push_back(v->get<std::string>());
  } else if (v->is_array() && !v->empty() && (v->front().is_number())) {
    prompts.push_back(f.token_ids(*v, "prompt"));
  } else if (v->is_array() && !v->empty()) {
    if (v->size() > kMaxPrompts) f.fail("prompt", "holds more than 64 prompts");
    for (const json& item : *v) {
      if (!item.is_string() && !item.is_array())
        f.fail("prompt", "must be a string, an array of strings, token ids or arrays of them");
      prompts.push_back(read_prompt_item(f, item));
    }
  } else {
    f.fail("prompt", "must be a non-empty string, array of strings, token ids or arrays of them");
  }
  for (const Prompt& p : prompts)
    if (std::holds_alternative<std::vector<TokenId>>(p) && std::get<1>(p).empty())
      f.fail("prompt", "must not be an empty list of token ids");
  return prompts;
}

// A message's content: a string, null, or a list of text parts joined by newlines (as vLLM
// does for templates that take string content).
json read_content(const json& content, const std::string& where) {
  if (content.is_null() || content.is_string()) return content;
  if (!content.is_array())
    throw bad_request(where, "'" + where + "' must be a string or an array of content parts");
  std::string text;
  bool first = true;
  for (const json& part : content) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      throw bad_request(where, "'" + where + "' parts must be objects with a 'type'");
    const std::string type = part["type"].get<std::string>();
    if (type != "text")
      throw bad_request(where, "content part type '" + type + "' is not supported (text only)");
    auto it = part.find("text");
    if (it == part.end() || !it->is_string())
      throw bad_request(where, "'" + where + "' text parts need a string 'text'");
    if (!first) text += '\n';
    text += it->get<std::string>();
    first = false;
  }
  return text;
}

json read_messages(const Fields& f) {
  const json* v = f.get("messages");
  if (!v) f.fail("messages", "is required");
  if (!v->is_array() || v->empty()) f.fail("messages", "must be a non-empty array of messages");
  static const std::set<std::string> kRoles = {"system",    "developer", "user",
                                               "assistant", "tool",      "function"};
  json messages = json::array();
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    const json& m = (*v)[i];
    if (!m.is_object()) throw bad_request(where, "'" + where + "' must be an object");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string() || !kRoles.count(role->get<std::string>()))
      throw bad_request(where + ".role", "'" + where +
                                             ".role' must be one of system, developer, user, "
                                             "assistant, tool, function");
    json message = m;
    if (m.contains("content")) message["content"] = read_content(m["content"], where + ".content");
    prepare_tool_message(message, where);
    messages.push_back(std::move(message));
  }
  return messages;
}

// Template variables: messages, tools and chat_template_kwargs. The tools keep the key order
// the client wrote (templates print them with tojson, as transformers does).
std::string template_context(const Fields& f, json messages, std::string_view body) {
  json context = json::object();
  if (const json* kwargs = f.get("chat_template_kwargs")) {
    if (!kwargs->is_object())
      f.fail("chat_template_kwargs", "must be an object, got " + type_name(*kwargs));
    context = *kwargs;
  }
  context["messages"] = std::move(messages);
  if (const json* tools = f.get("tools")) {
    if (!tools->is_array()) f.fail("tools", "must be an array, got " + type_name(*tools));
    for (const json& tool : *tools)
      if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object())
        f.fail("tools", "must hold objects with a 'function' object");
    if (!tools->empty()) {
      nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(context.dump());
      ordered["tools"] = nlohmann::ordered_json::parse(body)["tools"];
      return ordered.dump(-1, ' ', false, json::error_handler_t::strict);
    }
  }
  return context.dump(-1, ' ', false, json::error_handler_t::strict);
}

}  // namespace

nlohmann::json parse_json_body(std::string_view body) { return parse_object(body); }

CompletionRequest parse_completion_request(std::string_view body) {
  const json object = parse_object(body);
  Fields f(object, "");
  f.only(with_shared({"prompt", "suffix", "logprobs", "echo", "best_of"}));
  CompletionRequest c;
  c.fields = read_shared(f);
  c.fields.constraint = read_constraint(object, body);
  c.prompts = read_prompts(f);
  if (!c.fields.request.max_tokens) c.fields.request.max_tokens = 16;  // OpenAI's default
  if (auto k = f.integer("logprobs", 0, kMaxLogprobs)) c.fields.request.logprobs = int(*k);
  if (auto suffix = f.string("suffix"); suffix && !suffix->empty())
    f.fail("suffix", "is not supported by this server");
  if (f.boolean("echo").value_or(false)) f.fail("echo", "is not supported by this server");
  if (auto best_of = f.integer("best_of", 1, kMaxChoices);
      best_of && *best_of != c.fields.request.n)
    f.fail("best_of", "other than n is not supported by this server");
  c.add_special_tokens = f.boolean("add_special_tokens").value_or(true);
  if (c.prompts.size() * size_t(c.fields.request.n) > size_t(kMaxChoices))
    f.fail("n", "times the number of prompts must be at most 128");
  return c;
}

ChatRequest parse_chat_request(std::string_view body) {
  const json object = parse_object(body);
  Fields f(object, "");
  f.only(with_shared({"messages", "logprobs", "top_logprobs", "max_completion_tokens", "tools",
                      "tool_choice", "parallel_tool_calls", "add_generation_prompt",
                      "continue_final_message", "chat_template_kwargs"}));
  ChatRequest c;
  c.fields = read_shared(f);
  if (auto m = f.integer("max_completion_tokens", 1, INT32_MAX)) c.fields.request.max_tokens = *m;
  c.logprobs = f.boolean("logprobs").value_or(false);
  if (auto k = f.integer("top_logprobs", 0, kMaxLogprobs)) {
    if (!c.logprobs) f.fail("top_logprobs", "requires 'logprobs' to be true");
    c.fields.request.logprobs = int(*k);
  } else if (c.logprobs) {
    c.fields.request.logprobs = 0;
  }
  c.fields.constraint = read_constraint(object, body);
  c.tools = read_chat_tools(object);
  if (f.boolean("continue_final_message").value_or(false))
    f.fail("continue_final_message", "is not supported by this server");
  c.add_generation_prompt = f.boolean("add_generation_prompt").value_or(true);
  c.add_special_tokens = f.boolean("add_special_tokens").value_or(false);
  c.template_context = template_context(f, read_messages(f), body);
  return c;
}

TokenizeRequest parse_tokenize_request(std::string_view body) {
  const json object = parse_object(body);
  Fields f(object, "");
  f.only({"model", "prompt", "messages", "add_special_tokens", "add_generation_prompt", "tools",
          "chat_template_kwargs"});
  TokenizeRequest t;
  t.model = f.string("model");
  if (f.get("messages")) {
    if (f.get("prompt")) f.fail("prompt", "and 'messages' cannot both be given");
    t.template_context = template_context(f, read_messages(f), body);
    t.add_special_tokens = f.boolean("add_special_tokens").value_or(false);
  } else {
    t.prompt = f.string("prompt");
    if (!t.prompt) f.fail("prompt", "is required (or 'messages')");
    t.add_special_tokens = f.boolean("add_special_tokens").value_or(true);
  }
  t.add_generation_prompt = f.boolean("add_generation_prompt").value_or(true);
  return t;
}

DetokenizeRequest parse_detokenize_request(std::string_view body) {
  const json object = parse_object(body);
  Fields f(object, "");
  f.only({"model", "tokens"});
  DetokenizeRequest d;
  d.model = f.string("model");
  const json* tokens = f.get("tokens");
  if (!tokens) f.fail("tokens", "is required");
  d.tokens = f.token_ids(*tokens, "tokens");
  return d;
}

}  // namespace dq4::server
