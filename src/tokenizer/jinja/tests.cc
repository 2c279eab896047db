// Jinja2's built-in tests (`x is defined`, `x is not none`, ...), with Python's notion of types:
// a bool is also an integer and a number, a dict is iterable and a sequence.

#include <map>

#include "builtins.h"
#include "text.h"

namespace dq4::jinja {
namespace {

using Test = bool (*)(const Value& v, const CallArgs& args);

const Value& other(const CallArgs& args) { return required_arg(args, 0, "other", "test"); }

bool is_lower_text(const Value& v, bool upper) {
  if (!v.is_string()) return false;
  const std::string& s = v.as_string();
  return (upper ? to_upper(s) : to_lower(s)) == s;
}

const std::map<std::string, Test>& tests() {
  static const std::map<std::string, Test> kTests = {
      {"defined", [](const Value& v, const CallArgs&) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const CallArgs&) { return v.is_undefined(); }},
      {"none", [](const Value& v, const CallArgs&) { return v.is_none(); }},
      {"boolean", [](const Value& v, const CallArgs&) { return v.is_bool(); }},
      {"true", [](const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }},
      {"false", [](const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }},
      {"integer", [](const Value& v, const CallArgs&) { return v.is_int(); }},
      {"float", [](const Value& v, const CallArgs&) { return v.is_float(); }},
      {"number", [](const Value& v, const CallArgs&) { return v.is_number(); }},
      {"string", [](const Value& v, const CallArgs&) { return v.is_string(); }},
      {"mapping", [](const Value& v, const CallArgs&) { return v.is_dict(); }},
      {"iterable",
       [](const Value& v, const CallArgs&) {
         return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
       }},
      {"sequence",
       [](const Value& v, const CallArgs&) {
         return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
       }},
      {"callable", [](const Value& v, const CallArgs&) { return v.is_function(); }},
      {"odd",
       [](const Value& v, const CallArgs&) {
         if (!v.is_number() || v.is_float()) throw TemplateError("'odd' needs an integer");
         return v.as_int() % 2 != 0;
       }},
      {"even",
       [](const Value& v, const CallArgs&) {
         if (!v.is_number() || v.is_float()) throw TemplateError("'even' needs an integer");
         return v.as_int() % 2 == 0;
       }},
      {"divisibleby",
       [](const Value& v, const CallArgs& args) {
         const Value& n = required_arg(args, 0, "num", "test 'divisibleby'");
         if (!v.is_number() || v.is_float() || !n.is_number() || n.is_float())
           throw TemplateError("'divisibleby' needs integers");
         if (n.as_int() == 0) throw TemplateError("integer division or modulo by zero");
         return n.as_int() == -1 || v.as_int() % n.as_int() == 0;
       }},
      {"eq", [](const Value& v, const CallArgs& a) { return equals(v, other(a)); }},
      {"ne", [](const Value& v, const CallArgs& a) { return !equals(v, other(a)); }},
      {"lt", [](const Value& v, const CallArgs& a) { return compare(v, other(a)) < 0; }},
      {"le", [](const Value& v, const CallArgs& a) { return compare(v, other(a)) <= 0; }},
      {"gt", [](const Value& v, const CallArgs& a) { return compare(v, other(a)) > 0; }},
      {"ge", [](const Value& v, const CallArgs& a) { return compare(v, other(a)) >= 0; }},
      {"in", [](const Value& v, const CallArgs& a) { return contains(other(a), v); }},
      {"sameas", [](const Value& v, const CallArgs& a) { return v.same_as(other(a)); }},
      {"lower", [](const Value& v, const CallArgs&) { return is_lower_text(v, false); }},
      {"upper", [](const Value& v, const CallArgs&) { return is_lower_text(v, true); }},
  };
  return kTests;
}

// Jinja2's aliases of the comparison tests.
std::string canonical(const std::string& name) {
  static const std::map<std::string, std::string> kAliases = {
      {"equalto", "eq"}, {"==", "eq"},          {"!=", "ne"}, {"lessthan", "lt"}, {"<", "lt"},
      {"<=", "le"},      {"greaterthan", "gt"}, {">", "gt"},  {">=", "ge"}};
  const auto it = kAliases.find(name);
  return it == kAliases.end() ? name : it->second;
}

}  // namespace

bool is_test(const std::string& name) { return tests().count(canonical(name)) != 0; }

bool apply_test(const std::string& name, const Value& operand, const CallArgs& args) {
  const auto it = tests().find(canonical(name));
  if (it == tests().end()) throw TemplateError("no test named '" + name + "'");
  return it->second(operand, args);
}

}  // namespace dq4::jinja
