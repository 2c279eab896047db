#include "json_rules.h"

#include "dq4/constrain/to_gbnf.h"

namespace dq4::constrain {
namespace {

const char* hint(JsonRules::Kind kind) {
  using K = JsonRules::Kind;
  switch (kind) {
    case K::ws:
      return "ws";
    case K::character:
      return "char";
    case K::string:
      return "string";
    case K::number:
      return "number";
    case K::integer:
      return "integer";
    case K::boolean:
      return "boolean";
    case K::null:
      return "null";
    case K::value:
      return "value";
    case K::object:
      return "object";
    case K::array:
      return "array";
  }
  return "json";
}

}  // namespace

std::string JsonRules::ref(Kind kind) {
  auto it = names_.find(kind);
  if (it != names_.end()) return rules_.ref(it->second);
  const std::string name = rules_.fresh_name(hint(kind));
  names_.emplace(kind, name);
  using K = Kind;
  std::string body;
  switch (kind) {
    case K::ws:
      body = R"(( " " | "\n" [ \t]{0,20} )?)";
      break;
    case K::character:
      // Any code point but the quote, the backslash and the control characters, or an escape.
      body = R"([^"\\\x00-\x1F\x7F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ))";
      break;
    case K::string:
      body = "\"\\\"\" " + ref(K::character) + "* \"\\\"\" " + ref(K::ws);
      break;
    case K::number:
      // JSON's number with at most 16 digits before and after the point (a double's precision)
      // so that a model cannot write digits forever.
      body =
          R"("-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )? )" +
          ref(K::ws);
      break;
    case K::integer:
      body = R"("-"? ( "0" | [1-9] [0-9]{0,15} ) )" + ref(K::ws);
      break;
    case K::boolean:
      body = "( \"true\" | \"false\" ) " + ref(K::ws);
      break;
    case K::null:
      body = "\"null\" " + ref(K::ws);
      break;
    case K::value:
      body = ref(K::object) + " | " + ref(K::array) + " | " + ref(K::string) + " | " +
             ref(K::number) + " | " + ref(K::boolean) + " | " + ref(K::null);
      break;
    case K::object: {
      const std::string member = ref(K::string) + " \":\" " + ref(K::ws) + " " + ref(K::value);
      body = "\"{\" " + ref(K::ws) + " ( " + member + " ( \",\" " + ref(K::ws) + " " + member +
             " )* )? \"}\" " + ref(K::ws);
      break;
    }
    case K::array:
      body = "\"[\" " + ref(K::ws) + " ( " + ref(K::value) + " ( \",\" " + ref(K::ws) + " " +
             ref(K::value) + " )* )? \"]\" " + ref(K::ws);
      break;
  }
  rules_.define(name, body);
  return rules_.ref(name);
}

std::string json_object_gbnf(std::string_view rule_prefix) {
  RuleSet rules(rule_prefix);
  const std::string root = rules.fresh_name("root");
  JsonRules json(rules);
  rules.define(root, json.ref(JsonRules::Kind::object));
  return rules.text();
}

}  // namespace dq4::constrain
