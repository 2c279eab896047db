// ChatTemplate: finds a model's chat template and special tokens, parses the template once, and
// renders it with the variables transformers' apply_chat_template passes.

#include "dq4/tokenizer/chat_template.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dq4/kernels/error.h"
#include "jinja/interpreter.h"
#include "jinja/json.h"
#include "jinja/parser.h"

namespace dq4 {

struct ChatTemplate::Parsed {
  std::string source;
  jinja::Body body;
};

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("chat template: cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json parse_config(const fs::path& path) {
  try {
    return nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path.string() + ": not valid JSON: " + e.what());
  }
}

// A tokenizer_config.json (or chat_template.json) "chat_template": a string, or a list of
// {"name", "template"} of which transformers uses "default".
std::string template_of(const nlohmann::json& config, const fs::path& path) {
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null())
    throw Error(path.string() +
                ": has no \"chat_template\" (and no chat_template.jinja or chat_template.json "
                "beside it)");
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    std::string names;
    for (const auto& named : *it) {
      if (!named.is_object() || !named.contains("name") || !named.contains("template") ||
          !named["name"].is_string() || !named["template"].is_string())
        throw Error(path.string() +
                    ": \"chat_template\" list items must be {\"name\", \"template\"}");
      if (named["name"] == "default") return named["template"].get<std::string>();
      names += (names.empty() ? "" : ", ") + named["name"].get<std::string>();
    }
    throw Error(path.string() +
                ": \"chat_template\" has no template named \"default\" (has: " + names + ")");
  }
  throw Error(path.string() + ": \"chat_template\" must be a string or a list of named templates");
}

std::map<std::string, std::string> special_tokens_of(const nlohmann::json& config) {
  std::map<std::string, std::string> tokens;
  for (const char* name : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                           "cls_token", "mask_token"}) {
    const auto it = config.find(name);
    if (it == config.end()) continue;
    if (it->is_string()) tokens[name] = it->get<std::string>();
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
      tokens[name] = (*it)["content"].get<std::string>();
  }
  return tokens;
}

// The template source of directory `dir` whose tokenizer_config.json is `config` (an empty object
// when absent), in ChatTemplate::find_source's order.
std::optional<std::string> source_in(const fs::path& dir, const nlohmann::json& config) {
  std::error_code ec;
  const fs::path jinja_path = dir / "chat_template.jinja";
  if (fs::exists(jinja_path, ec)) return read_file(jinja_path);
  if (const auto it = config.find("chat_template"); it != config.end() && !it->is_null())
    return template_of(config, dir / "tokenizer_config.json");
  // A multimodal repository's processor keeps it there (vLLM falls back to it too).
  const fs::path processor_path = dir / "chat_template.json";
  if (fs::exists(processor_path, ec))
    return template_of(parse_config(processor_path), processor_path);
  return std::nullopt;
}

// tokenizer_config.json of directory `dir`, or an empty object when there is none.
nlohmann::json config_in(const fs::path& dir) {
  std::error_code ec;
  const fs::path path = dir / "tokenizer_config.json";
  return fs::exists(path, ec) ? parse_config(path) : nlohmann::json::object();
}

}  // namespace

ChatTemplate ChatTemplate::from_source(std::string_view source) {
  ChatTemplate t;
  auto parsed = std::make_shared<Parsed>();
  parsed->source = std::string(source);
  parsed->body = jinja::parse(parsed->source);
  t.parsed_ = std::move(parsed);
  return t;
}

std::optional<std::string> ChatTemplate::find_source(const std::string& dir) {
  return source_in(dir, config_in(dir));
}

ChatTemplate ChatTemplate::from_tokenizer_config(const std::string& path_or_dir) {
  const fs::path given(path_or_dir);
  std::error_code ec;
  if (fs::is_directory(given, ec)) {
    const fs::path config_path = given / "tokenizer_config.json";
    const nlohmann::json config = config_in(given);
    const std::optional<std::string> source = source_in(given, config);
    if (!source && !fs::exists(config_path, ec))
      throw Error(path_or_dir +
                  ": has no tokenizer_config.json, chat_template.jinja or chat_template.json");
    ChatTemplate t = from_source(source ? *source : template_of(config, config_path));
    t.special_tokens_ = special_tokens_of(config);
    return t;
  }
  if (!fs::exists(given, ec)) throw Error(path_or_dir + ": no such file or directory");
  const nlohmann::json config = parse_config(given);
  ChatTemplate t = from_source(template_of(config, given));
  t.special_tokens_ = special_tokens_of(config);
  return t;
}

std::map<std::string, std::string> ChatTemplate::read_special_tokens(
    const std::string& path_or_dir) {
  const fs::path given(path_or_dir);
  std::error_code ec;
  const fs::path config_path =
      fs::is_directory(given, ec) ? given / "tokenizer_config.json" : given;
  if (!fs::exists(config_path, ec)) {
    if (fs::is_directory(given, ec)) return {};
    throw Error(path_or_dir + ": no such file or directory");
  }
  return special_tokens_of(parse_config(config_path));
}

const std::string& ChatTemplate::source() const { return parsed_->source; }

std::string ChatTemplate::render(std::string_view context_json, bool add_generation_prompt) const {
  nlohmann::ordered_json context;
  try {
    context = nlohmann::ordered_json::parse(context_json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("chat template context: not valid JSON: ") + e.what());
  }
  if (context.is_array()) context = nlohmann::ordered_json{{"messages", std::move(context)}};
  if (!context.is_object())
    throw Error("chat template context: expected a JSON object or an array of messages");
  if (!context.contains("messages") || !context["messages"].is_array())
    throw Error("chat template context: \"messages\" must be an array of messages");

  jinja::ValueDict variables;
  for (const auto& [name, text] : special_tokens_) variables.set(name, jinja::Value(text));
  variables.set("tools", jinja::Value::none());
  variables.set("documents", jinja::Value::none());
  try {
    for (const auto& [key, value] : context.items()) variables.set(key, jinja::from_json(value));
  } catch (const jinja::TemplateError& e) {
    throw Error(std::string("chat template context: ") + e.what());
  }
  variables.set("add_generation_prompt", jinja::Value(add_generation_prompt));
  return jinja::render(parsed_->body, variables);
}

}  // namespace dq4
