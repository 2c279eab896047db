#include "structured_output.h"

#include <nlohmann/json.hpp>
#include <set>

#include "api_error.h"

namespace dq4::server {
namespace {

// Ordered: a schema's properties keep the client's order.
using nlohmann::ordered_json;
using Kind = constrain::ConstraintSpec::Kind;

[[noreturn]] void fail(const std::string& param, const std::string& message) {
  throw bad_request(param, "'" + param + "' " + message);
}

void only(const ordered_json& object, const std::string& prefix,
          const std::set<std::string_view>& known) {
  for (auto it = object.begin(); it != object.end(); ++it)
    if (!known.count(it.key()))
      throw bad_request(prefix + it.key(),
                        "Unrecognized request argument supplied: " + prefix + it.key());
}

const ordered_json* get(const ordered_json& object, std::string_view key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string string_of(const ordered_json& v, const std::string& param) {
  if (!v.is_string()) fail(param, "must be a string");
  return v.get<std::string>();
}

// A schema: an object, or its JSON text (vLLM takes both).
std::string schema_of(const ordered_json& v, const std::string& param) {
  if (v.is_object()) return v.dump();
  if (!v.is_string()) fail(param, "must be a JSON schema (an object or its JSON text)");
  ordered_json parsed;
  try {
    parsed = ordered_json::parse(v.get<std::string>());
  } catch (const ordered_json::exception&) {
    fail(param, "is a string that is not valid JSON");
  }
  if (!parsed.is_object() && !parsed.is_boolean()) fail(param, "must be a JSON schema object");
  return parsed.dump();
}

std::vector<std::string> choices_of(const ordered_json& v, const std::string& param) {
  if (!v.is_array() || v.empty()) fail(param, "must be a non-empty array of strings");
  std::vector<std::string> out;
  for (const ordered_json& c : v) out.push_back(string_of(c, param));
  return out;
}

OutputConstraint make(Kind kind, std::string text, std::string param) {
  OutputConstraint c;
  c.spec.kind = kind;
  c.spec.text = std::move(text);
  c.param = std::move(param);
  return c;
}

// response_format: nothing for "text".
std::optional<OutputConstraint> read_response_format(const ordered_json& v) {
  if (!v.is_object()) fail("response_format", "must be an object");
  const ordered_json* type = get(v, "type");
  if (!type || !type->is_string())
    fail("response_format.type", "must be one of \"text\", \"json_object\", \"json_schema\"");
  const std::string t = type->get<std::string>();
  if (t == "text" || t == "json_object") {
    only(v, "response_format.", {"type"});
    if (t == "text") return std::nullopt;
    return make(Kind::json_object, "", "response_format");
  }
  if (t != "json_schema")
    fail("response_format.type",
         "must be one of \"text\", \"json_object\", \"json_schema\", got \"" + t + "\"");
  only(v, "response_format.", {"type", "json_schema"});
  const ordered_json* js = get(v, "json_schema");
  if (!js || !js->is_object())
    fail("response_format.json_schema", "must be an object with the schema, for type json_schema");
  only(*js, "response_format.json_schema.", {"name", "schema", "strict", "description"});
  if (const ordered_json* name = get(*js, "name"))
    string_of(*name, "response_format.json_schema.name");
  if (const ordered_json* d = get(*js, "description"))
    string_of(*d, "response_format.json_schema.description");
  // Strict or not, the output is held to the schema.
  if (const ordered_json* strict = get(*js, "strict"); strict && !strict->is_boolean())
    fail("response_format.json_schema.strict", "must be a boolean");
  const std::string param = "response_format.json_schema.schema";
  const ordered_json* schema = get(*js, "schema");
  if (!schema) fail(param, "is required");
  return make(Kind::json_schema, schema_of(*schema, param), param);
}

// The kinds in structured_outputs (and the guided_* fields under `prefix`).
void read_kinds(const ordered_json& object, const std::string& prefix, const std::string& json_key,
                std::vector<OutputConstraint>& found) {
  const auto name = [&](std::string_view key) { return prefix + std::string(key); };
  if (const ordered_json* v = get(object, json_key))
    found.push_back(make(Kind::json_schema, schema_of(*v, name(json_key)), name(json_key)));
  if (const ordered_json* v = get(object, "regex"))
    found.push_back(make(Kind::regex, string_of(*v, name("regex")), name("regex")));
  if (const ordered_json* v = get(object, "grammar"))
    found.push_back(make(Kind::grammar, string_of(*v, name("grammar")), name("grammar")));
  if (const ordered_json* v = get(object, "choice")) {
    OutputConstraint c = make(Kind::choice, "", name("choice"));
    c.spec.choices = choices_of(*v, name("choice"));
    found.push_back(std::move(c));
  }
}

}  // namespace

const std::vector<std::string_view>& structured_output_keys() {
  static const std::vector<std::string_view> keys = {"response_format",
                                                     "structured_outputs",
                                                     "guided_json",
                                                     "guided_regex",
                                                     "guided_choice",
                                                     "guided_grammar",
                                                     "guided_decoding_backend",
                                                     "guided_whitespace_pattern"};
  return keys;
}

std::optional<OutputConstraint> read_output_constraint(std::string_view body) {
  const ordered_json object = ordered_json::parse(body);
  std::vector<OutputConstraint> found;
  if (const ordered_json* v = get(object, "response_format"))
    if (auto c = read_response_format(*v)) found.push_back(std::move(*c));
  if (const ordered_json* so = get(object, "structured_outputs")) {
    if (!so->is_object()) fail("structured_outputs", "must be an object");
    only(*so, "structured_outputs.",
         {"json", "regex", "choice", "grammar", "json_object", "structural_tag"});
    if (get(*so, "structural_tag"))
      fail("structured_outputs.structural_tag", "is not supported by this server");
    read_kinds(*so, "structured_outputs.", "json", found);
    if (const ordered_json* v = get(*so, "json_object")) {
      if (!v->is_boolean()) fail("structured_outputs.json_object", "must be a boolean");
      if (v->get<bool>()) found.push_back(make(Kind::json_object, "", "structured_outputs"));
    }
  }
  // The older fields: guided_json, guided_regex, guided_choice, guided_grammar.
  ordered_json guided = ordered_json::object();
  for (const char* key : {"json", "regex", "choice", "grammar"})
    if (const ordered_json* v = get(object, std::string("guided_") + key)) guided[key] = *v;
  read_kinds(guided, "guided_", "json", found);
  if (const ordered_json* v = get(object, "guided_decoding_backend"))
    string_of(*v, "guided_decoding_backend");
  if (get(object, "guided_whitespace_pattern"))
    fail("guided_whitespace_pattern",
         "is not supported by this server (a schema's whitespace is bounded by the server)");
  if (found.size() > 1)
    throw bad_request(found[1].param, "'" + found[0].param + "' and '" + found[1].param +
                                          "' cannot both be given: one output constraint (JSON "
                                          "schema, JSON object, regex, choice or grammar) at a "
                                          "time");
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

}  // namespace dq4::server
