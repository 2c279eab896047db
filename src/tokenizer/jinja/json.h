#pragma once
// JSON in and out of template values: the render context arrives as JSON (key order kept, as
// Python's json.loads keeps it), and the `tojson` filter writes what transformers' tojson writes
// (json.dumps with ensure_ascii=False unless asked).

#include <nlohmann/json.hpp>
#include <string>

#include "value.h"

namespace dq4::jinja {

Value from_json(const nlohmann::ordered_json& json);

struct JsonStyle {
  std::string indent;   // per level; used when `pretty`
  bool pretty = false;  // json.dumps(indent=...) was given (even indent=0)
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool ensure_ascii = false;
  bool sort_keys = false;
};

// TemplateError for values JSON cannot hold (undefined, functions, namespaces).
std::string to_json(const Value& v, const JsonStyle& style);

}  // namespace dq4::jinja
