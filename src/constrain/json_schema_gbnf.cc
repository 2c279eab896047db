// JSON Schema -> GBNF. What is supported and why, keyword by keyword, is in schema_keywords.h.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dq4/constrain/constraint.h"
#include "dq4/constrain/to_gbnf.h"
#include "gbnf_writer.h"
#include "json_rules.h"
#include "key_exclusion.h"
#include "numeric_range.h"
#include "regex_gbnf.h"
#include "schema_keywords.h"
#include "string_formats.h"

namespace dq4::constrain {
namespace {

using Json = nlohmann::ordered_json;
using K = JsonRules::Kind;

constexpr int kMaxJsonDepth = 128;    // nesting of the schema's JSON text
constexpr int kMaxSchemaDepth = 256;  // nesting of subschemas, through $ref included

[[noreturn]] void refuse(const std::string& what, const std::string& path) {
  throw ConstraintError("json_schema: " + what + " at " + path);
}

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

Json parse_schema(std::string_view text) {
  const Json::parser_callback_t limit_depth = [](int depth, Json::parse_event_t, Json&) {
    if (depth > kMaxJsonDepth) {
      throw ConstraintError("json_schema: JSON nested deeper than " +
                            std::to_string(kMaxJsonDepth));
    }
    return true;
  };
  try {
    return Json::parse(text, limit_depth);
  } catch (const Json::parse_error& e) {
    throw ConstraintError("json_schema: not valid JSON at byte " + std::to_string(e.byte) + " (" +
                          e.what() + ")");
  } catch (const Json::exception& e) {  // e.g. a number out of the range of a double
    throw ConstraintError(std::string("json_schema: not valid JSON (") + e.what() + ")");
  }
}

bool of_type(const Json& value, const std::string& type) {
  if (type == "null") return value.is_null();
  if (type == "boolean") return value.is_boolean();
  if (type == "string") return value.is_string();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "number") return value.is_number();
  if (type == "integer") {
    return value.is_number_integer() ||
           (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
  }
  return false;
}

class SchemaConverter {
 public:
  SchemaConverter(std::string_view text, std::string_view prefix)
      : root_schema_(parse_schema(text)), rules_(prefix), json_(rules_) {}

  std::string convert() {
    const std::string root = rules_.fresh_name("root");
    refs_["#"] = root;
    rules_.define(root, visit(root_schema_, "#", "#", 0));
    check_ref_cycles();
    return rules_.text();
  }

 private:
  std::string ws() { return json_.ref(K::ws); }

  // The expression for `schema` (at JSON pointer `path`). `head` is the $ref whose expansion
  // writes nothing before this point ("" once something was written), for finding recursion
  // that would not advance.
  std::string visit(const Json& schema, const std::string& path, const std::string& head,
                    int depth) {
    if (depth > kMaxSchemaDepth) {
      refuse("subschemas nested deeper than " + std::to_string(kMaxSchemaDepth), path);
    }
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return json_.ref(K::value);
      refuse("schema false (no value is valid)", path);
    }
    if (!schema.is_object()) refuse("a schema must be an object or a boolean", path);
    check_keywords(schema, path);

    if (schema.contains("$ref")) {
      only_beside(schema, "$ref", {}, path);
      const Json& ref = schema["$ref"];
      if (!ref.is_string()) refuse("$ref that is not a string", path + "/$ref");
      return ref_rule(ref.get<std::string>(), path + "/$ref", head, depth);
    }
    if (schema.contains("allOf")) {
      only_beside(schema, "allOf", {}, path);
      const Json& all = schema["allOf"];
      if (!all.is_array() || all.size() != 1) {
        refuse("allOf with more than one schema (not supported)", path + "/allOf");
      }
      return visit(all[0], path + "/allOf/0", head, depth + 1);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!schema.contains(key)) continue;
      only_beside(schema, key, {}, path);
      const Json& options = schema[key];
      if (!options.is_array() || options.empty()) {
        refuse(std::string(key) + " must be a non-empty array", path + "/" + key);
      }
      std::string out;
      for (size_t i = 0; i < options.size(); ++i) {
        if (!out.empty()) out += " | ";
        out += visit(options[i], path + "/" + key + "/" + std::to_string(i), head, depth + 1);
      }
      return rules_.shared("any-of", out);  // a rule: nested anyOf never nests parentheses
    }
    const std::vector<std::string> types = declared_types(schema, path);
    if (schema.contains("enum") || schema.contains("const"))
      return enumeration(schema, types, path);

    const std::vector<std::string> kinds = types.empty() ? implied_types(schema) : types;
    if (kinds.empty()) return json_.ref(K::value);
    if (kinds.size() == 1) return typed(schema, kinds[0], path, depth);
    std::string out;
    for (const auto& type : kinds) {
      if (!out.empty()) out += " | ";
      out += typed(schema, type, path, depth);
    }
    return rules_.shared("types", out);
  }

  void check_keywords(const Json& schema, const std::string& path) {
    for (const auto& [key, value] : schema.items()) {
      if (refused_keyword(key)) refuse("keyword '" + key + "' is not supported", path);
      if (key == "uniqueItems" && value != Json(false)) {
        refuse("keyword 'uniqueItems' is not supported", path);
      }
    }
  }

  // Refuses any assertion beside `keyword` but those in `allowed` (annotations are fine).
  void only_beside(const Json& schema, const std::string& keyword,
                   const std::set<std::string>& allowed, const std::string& path) {
    for (const auto& [key, value] : schema.items()) {
      if (key != keyword && assertion_keyword(key) && allowed.count(key) == 0) {
        refuse("keyword '" + key + "' beside '" + keyword + "' is not supported", path);
      }
    }
  }

  std::vector<std::string> declared_types(const Json& schema, const std::string& path) {
    std::vector<std::string> types;
    if (!schema.contains("type")) return types;
    const Json& type = schema["type"];
    const Json list = type.is_array() ? type : Json::array({type});
    for (const auto& t : list) {
      static const std::set<std::string> known = {"null",    "boolean", "string", "number",
                                                  "integer", "object",  "array"};
      if (!t.is_string() || known.count(t.get<std::string>()) == 0) {
        refuse("unknown type " + t.dump(), path + "/type");
      }
      types.push_back(t.get<std::string>());
    }
    if (types.empty()) refuse("empty type list", path + "/type");
    return types;
  }

  // Without `type`, the types the keywords present constrain (any value when none does): the
  // output then has one of them, a subset of what the schema allows.
  static std::vector<std::string> implied_types(const Json& schema) {
    std::vector<std::string> types;
    auto any = [&](std::initializer_list<const char*> keys) {
      for (const char* k : keys) {
        if (schema.contains(k)) return true;
      }
      return false;
    };
    if (any({"properties", "required", "additionalProperties"})) types.push_back("object");
    if (any({"items", "prefixItems", "minItems", "maxItems"})) types.push_back("array");
    if (any({"pattern", "format", "minLength", "maxLength"})) types.push_back("string");
    if (any({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) {
      types.push_back("number");
    }
    return types;
  }

  std::string enumeration(const Json& schema, const std::vector<std::string>& types,
                          const std::string& path) {
    const char* key = schema.contains("enum") ? "enum" : "const";
    only_beside(schema, key, {"type"}, path);
    if (schema.contains("enum") && schema.contains("const")) {
      refuse("enum beside const is not supported", path);
    }
    const Json values = schema.contains("enum") ? schema["enum"] : Json::array({schema["const"]});
    if (!values.is_array()) refuse("enum must be an array", path + "/enum");
    std::string out;
    for (const auto& value : values) {
      bool typed = types.empty();
      for (const auto& t : types) typed = typed || of_type(value, t);
      if (!typed) continue;
      if (!out.empty()) out += " | ";
      out += gbnf_literal(value.dump()) + " " + ws();
    }
    if (out.empty()) refuse(std::string(key) + " has no value the schema's type allows", path);
    return "( " + out + " )";
  }

  std::string typed(const Json& schema, const std::string& type, const std::string& path,
                    int depth) {
    if (type == "null") return json_.ref(K::null);
    if (type == "boolean") return json_.ref(K::boolean);
    if (type == "string") return string_schema(schema, path);
    if (type == "integer") return integer_schema(schema, path);
    if (type == "number") return number_schema(schema, path);
    if (type == "array") return array_schema(schema, path, depth);
    return object_schema(schema, path, depth);
  }

  std::optional<int> count(const Json& schema, const char* key, const std::string& path) {
    if (!schema.contains(key)) return std::nullopt;
    const Json& v = schema[key];
    if (!of_type(v, "integer") || v.get<double>() < 0) {
      refuse(std::string(key) + " must be a non-negative integer", path + "/" + key);
    }
    if (v.get<double>() > kMaxRepeat) {
      refuse(std::string("keyword '") + key + "' above " + std::to_string(kMaxRepeat), path);
    }
    return static_cast<int>(v.get<double>());
  }

  static std::string repetition(int min, std::optional<int> max) {
    if (!max) return min == 0 ? "*" : min == 1 ? "+" : "{" + std::to_string(min) + ",}";
    if (min == 0 && *max == 1) return "?";
    if (min == *max) return min == 1 ? "" : "{" + std::to_string(min) + "}";
    return "{" + std::to_string(min) + "," + std::to_string(*max) + "}";
  }

  std::string string_schema(const Json& schema, const std::string& path) {
    const std::string quote = "\"\\\"\"";
    const std::optional<int> min = count(schema, "minLength", path);
    const std::optional<int> max = count(schema, "maxLength", path);
    const bool length = min || max;
    if (min && max && *max < *min) refuse("maxLength below minLength", path);
    if (schema.contains("pattern")) {
      if (length) refuse("minLength/maxLength beside pattern are not supported", path);
      if (schema.contains("format")) refuse("format beside pattern is not supported", path);
      const Json& pattern = schema["pattern"];
      if (!pattern.is_string()) refuse("pattern must be a string", path + "/pattern");
      RegexNode tree;
      try {
        tree = parse_regex(pattern.get<std::string>());
      } catch (const ConstraintError& e) {
        refuse(std::string("pattern: ") + e.what(), path + "/pattern");
      }
      if (tree.kind == RegexNode::Kind::nothing) refuse("pattern matches nothing", path);
      return quote + " ( " + regex_expression(tree, rules_, true) + " ) " + quote + " " + ws();
    }
    if (schema.contains("format")) {
      if (length) refuse("minLength/maxLength beside format are not supported", path);
      const Json& format = schema["format"];
      const std::string name = format.is_string() ? format.get<std::string>() : format.dump();
      const std::string body = string_format_gbnf(name);
      if (body.empty()) refuse("format '" + name + "' is not supported", path + "/format");
      return quote + " " + rules_.shared(name, body) + " " + quote + " " + ws();
    }
    if (!length) return json_.ref(K::string);
    return quote + " " + json_.ref(K::character) + repetition(min.value_or(0), max) + " " + quote +
           " " + ws();
  }

  std::optional<int64_t> bound(const Json& schema, const char* key, bool lower,
                               const std::string& path) {
    if (!schema.contains(key)) return std::nullopt;
    const Json& v = schema[key];
    if (!v.is_number()) refuse(std::string(key) + " must be a number", path + "/" + key);
    const double x = v.get<double>();
    const bool exclusive = std::string(key).rfind("exclusive", 0) == 0;
    const double limit = static_cast<double>(kMaxJsonInteger) + 1;
    if (x <= -limit) return lower ? -kMaxJsonInteger : static_cast<int64_t>(-limit);
    if (x >= limit) return lower ? static_cast<int64_t>(limit) : kMaxJsonInteger;
    double b = lower ? std::ceil(x) : std::floor(x);
    if (exclusive && b == x) b += lower ? 1 : -1;
    return static_cast<int64_t>(b);
  }

  std::string integer_schema(const Json& schema, const std::string& path) {
    std::optional<int64_t> lo = bound(schema, "minimum", true, path);
    std::optional<int64_t> hi = bound(schema, "maximum", false, path);
    if (auto x = bound(schema, "exclusiveMinimum", true, path)) lo = lo ? std::max(*lo, *x) : *x;
    if (auto x = bound(schema, "exclusiveMaximum", false, path)) hi = hi ? std::min(*hi, *x) : *x;
    if (!lo && !hi) return json_.ref(K::integer);
    try {
      return integer_range_gbnf(lo, hi) + " " + ws();
    } catch (const ConstraintError& e) {
      refuse(e.what(), path);
    }
  }

  // Bounds on a number: integers only (what covers most schemas and keeps the grammar simple).
  std::optional<NumberBound> number_bound(const Json& schema, const char* key,
                                          const std::string& path) {
    if (!schema.contains(key)) return std::nullopt;
    const Json& v = schema[key];
    if (!of_type(v, "integer")) {
      refuse(std::string("keyword '") + key + "' on a number with a bound that is not an integer",
             path);
    }
    const double x = std::clamp(v.get<double>(), -1e17, 1e17);
    return NumberBound{static_cast<int64_t>(x), std::string(key).rfind("exclusive", 0) == 0};
  }

  std::string number_schema(const Json& schema, const std::string& path) {
    std::optional<NumberBound> lo = number_bound(schema, "minimum", path);
    std::optional<NumberBound> hi = number_bound(schema, "maximum", path);
    if (auto x = number_bound(schema, "exclusiveMinimum", path)) {
      if (!lo || x->value >= lo->value) lo = x;
    }
    if (auto x = number_bound(schema, "exclusiveMaximum", path)) {
      if (!hi || x->value <= hi->value) hi = x;
    }
    if (!lo && !hi) return json_.ref(K::number);
    try {
      return number_range_gbnf(lo, hi) + " " + ws();
    } catch (const ConstraintError& e) {
      refuse(e.what(), path);
    }
  }

  // An array: the tuple's elements first (prefixItems, or draft 7's items array), all of them as
  // far as maxItems allows, then elements of the rest's schema (items, or additionalItems after
  // an items array) as minItems and maxItems want.
  std::string array_schema(const Json& schema, const std::string& path, int depth) {
    int min = count(schema, "minItems", path).value_or(0);
    std::optional<int> max = count(schema, "maxItems", path);
    if (max && *max < min) refuse("maxItems below minItems", path);
    const Json* tuple = nullptr;
    std::string tuple_key = "prefixItems";
    const char* rest_key = "items";
    if (schema.contains("prefixItems")) {
      tuple = &schema["prefixItems"];
    } else if (schema.contains("items") && schema["items"].is_array()) {
      tuple = &schema["items"];
      tuple_key = "items";
      rest_key = "additionalItems";
    }
    if (tuple != nullptr && !tuple->is_array()) refuse(tuple_key + " must be an array", path);

    const std::string comma = "\",\" " + ws() + " ";
    std::string first;  // the tuple's elements, comma-separated
    int written = 0;
    if (tuple != nullptr) {
      const size_t k = std::min<size_t>(tuple->size(), max ? static_cast<size_t>(*max) : SIZE_MAX);
      for (size_t i = 0; i < k; ++i) {
        const std::string at = path + "/" + tuple_key + "/" + std::to_string(i);
        first += (i == 0 ? "" : comma) + visit((*tuple)[i], at, "", depth + 1) + " ";
      }
      written = static_cast<int>(k);
      min = std::max(min - written, 0);
      if (max) *max -= written;
    }
    std::string item = json_.ref(K::value);
    if (schema.contains(rest_key)) {
      const Json& rest = schema[rest_key];
      if (rest == Json(false)) {
        if (min > 0)
          refuse(std::string("minItems needs more items than ") + rest_key + " false allows", path);
        max = 0;
      } else {
        item = rules_.shared("item", visit(rest, path + "/" + rest_key, "", depth + 1));
      }
    }
    const std::string open = "\"[\" " + ws() + " ";
    const std::string close = "\"]\" " + ws();
    if (max && *max == 0) return open + first + close;
    const std::string next = rules_.shared("next-item", comma + item);
    if (written > 0) return open + first + next + repetition(min, max) + " " + close;
    std::optional<int> more;
    if (max) more = *max - 1;
    std::string items = item + " " + next + repetition(std::max(min - 1, 0), more);
    if (min == 0) items = "( " + items + " )?";
    return open + items + " " + close;
  }

  std::string object_schema(const Json& schema, const std::string& path, int depth) {
    const Json no_properties = Json::object();
    const Json& properties = schema.contains("properties") ? schema["properties"] : no_properties;
    if (!properties.is_object()) refuse("properties must be an object", path + "/properties");
    std::set<std::string> required;
    if (schema.contains("required")) {
      const Json& list = schema["required"];
      if (!list.is_array()) refuse("required must be an array", path + "/required");
      for (const auto& name : list) {
        if (!name.is_string()) refuse("required holds a non-string", path + "/required");
        if (!properties.contains(name.get<std::string>())) {
          refuse("required property '" + name.get<std::string>() +
                     "' not in properties (not supported)",
                 path + "/required");
        }
        required.insert(name.get<std::string>());
      }
    }

    // The properties, in the schema's order: "key" ws ":" ws value.
    struct Member {
      std::string text;
      bool required;
    };
    std::vector<Member> members;
    std::vector<std::string> names;
    for (const auto& [name, property] : properties.items()) {
      names.push_back(name);
      const std::string at = path + "/properties/" + pointer_token(name);
      if (property == Json(false)) {
        if (required.count(name) != 0) refuse("required property with schema false", at);
        continue;
      }
      const std::string key = gbnf_literal(Json(name).dump()) + " " + ws() + " \":\" " + ws();
      members.push_back(
          {key + " " + visit(property, at, "", depth + 1), required.count(name) != 0});
    }

    // Without properties or additionalProperties: any object (as llama.cpp reads it).
    if (!schema.contains("properties") && !schema.contains("additionalProperties") &&
        required.empty()) {
      return json_.ref(K::object);
    }
    // Other properties: only where additionalProperties allows them (absent means no beside
    // properties, as in OpenAI's strict mode, llama.cpp and xgrammar's default), after the
    // declared ones, under any other name.
    std::string extra;
    const Json* additional =
        schema.contains("additionalProperties") ? &schema["additionalProperties"] : nullptr;
    if (additional != nullptr && *additional != Json(false)) {
      const std::string value =
          *additional == Json(true)
              ? json_.ref(K::value)
              : visit(*additional, path + "/additionalProperties", "", depth + 1);
      const std::string key = names.empty() ? json_.ref(K::string) : key_excluding(names);
      extra = rules_.shared("extra-member", key + " \":\" " + ws() + " " + value);
    }

    const std::string comma = "\",\" " + ws() + " ";
    // tail[k]: what may follow once the members before k were written (each with its comma).
    std::vector<std::string> tail(members.size() + 1);
    if (!extra.empty()) tail.back() = rules_.shared("extra-members", "( " + comma + extra + " )*");
    for (size_t k = members.size(); k-- > 0;) {
      std::string body =
          members[k].required ? comma + members[k].text : "( " + comma + members[k].text + " )?";
      if (!tail[k + 1].empty()) body += " " + tail[k + 1];
      tail[k] = rules_.shared("members", body);
    }
    // The first member written: any up to the first required one.
    std::string first;
    bool any_required = false;
    for (size_t j = 0; j < members.size() && !any_required; ++j) {
      if (!first.empty()) first += " | ";
      first += members[j].text + (tail[j + 1].empty() ? "" : " " + tail[j + 1]);
      any_required = members[j].required;
    }
    if (!any_required && !extra.empty()) {
      if (!first.empty()) first += " | ";
      first += extra + " " + tail.back();
    }
    std::string body = "\"{\" " + ws() + " ";
    if (!first.empty()) body += any_required ? "( " + first + " ) " : "( " + first + " )? ";
    return body + "\"}\" " + ws();
  }

  std::string key_excluding(const std::vector<std::string>& names) {
    return key_excluding_gbnf(names, rules_, json_);
  }

  std::string ref_rule(const std::string& pointer, const std::string& path, const std::string& head,
                       int depth) {
    if (!head.empty()) head_refs_[head].insert(pointer);
    auto it = refs_.find(pointer);
    if (it != refs_.end()) return rules_.ref(it->second);
    const Json& target = resolve(pointer, path);
    const size_t slash = pointer.rfind('/');
    const std::string name =
        rules_.fresh_name(pointer.substr(slash == std::string::npos ? 0 : slash + 1));
    refs_[pointer] = name;
    rules_.define(name, visit(target, pointer, pointer, depth + 1));
    return rules_.ref(name);
  }

  const Json& resolve(const std::string& pointer, const std::string& path) {
    if (pointer.empty() || pointer[0] != '#') {
      refuse("$ref '" + pointer + "' outside this schema (not supported)", path);
    }
    if (pointer.size() > 1 && pointer[1] != '/') {
      refuse("$ref '" + pointer + "' to an anchor (not supported)", path);
    }
    const Json* at = &root_schema_;
    size_t pos = 1;
    while (pos < pointer.size()) {
      const size_t end = std::min(pointer.find('/', pos + 1), pointer.size());
      const std::string token = unescape(pointer.substr(pos + 1, end - pos - 1), path);
      if (at->is_object() && at->contains(token)) {
        at = &(*at)[token];
      } else if (at->is_array() && !token.empty() &&
                 token.find_first_not_of("0123456789") == std::string::npos && token.size() < 10 &&
                 std::stoul(token) < at->size()) {
        at = &(*at)[std::stoul(token)];
      } else {
        refuse("$ref '" + pointer + "' names nothing in the schema", path);
      }
      pos = end;
    }
    return *at;
  }

  static std::string unescape(const std::string& token, const std::string& path) {
    std::string decoded;
    for (size_t i = 0; i < token.size(); ++i) {
      if (token[i] == '%' && i + 2 < token.size() &&
          std::isxdigit(static_cast<unsigned char>(token[i + 1])) &&
          std::isxdigit(static_cast<unsigned char>(token[i + 2]))) {
        decoded += static_cast<char>(std::stoi(token.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        decoded += token[i];
      }
    }
    std::string out;
    for (size_t i = 0; i < decoded.size(); ++i) {
      if (decoded[i] != '~') {
        out += decoded[i];
      } else if (i + 1 < decoded.size() && (decoded[i + 1] == '0' || decoded[i + 1] == '1')) {
        out += decoded[++i] == '0' ? '~' : '/';
      } else {
        refuse("$ref with a bad '~' escape", path);
      }
    }
    return out;
  }

  // A $ref reached again before anything was written recurses forever (left recursion).
  void check_ref_cycles() {
    std::map<std::string, int> state;  // 1: on the path, 2: done
    std::vector<std::string> trail;
    std::function<void(const std::string&)> walk = [&](const std::string& ref) {
      state[ref] = 1;
      trail.push_back(ref);
      for (const auto& next : head_refs_[ref]) {
        if (state[next] == 1) {
          std::string cycle;
          for (auto it = std::find(trail.begin(), trail.end(), next); it != trail.end(); ++it) {
            cycle += *it + " -> ";
          }
          refuse("$ref recursion that writes nothing before recursing (" + cycle + next + ")",
                 next);
        }
        if (state[next] == 0) walk(next);
      }
      trail.pop_back();
      state[ref] = 2;
    };
    for (const auto& [ref, next] : head_refs_) {
      if (state[ref] == 0) walk(ref);
    }
  }

  Json root_schema_;
  RuleSet rules_;
  JsonRules json_;
  std::map<std::string, std::string> refs_;  // $ref -> rule name
  std::map<std::string, std::set<std::string>> head_refs_;
};

}  // namespace

std::string json_schema_to_gbnf(std::string_view schema_json, std::string_view rule_prefix) {
  return SchemaConverter(schema_json, rule_prefix).convert();
}

}  // namespace dq4::constrain
