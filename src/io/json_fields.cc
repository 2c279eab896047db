#include "json_fields.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "dq4/kernels/error.h"

namespace dq4::io {

namespace {

// Writes `value` as JSON text onto `out` until `out` is longer than `max`. Each level of nesting
// writes a bracket before going deeper, so the recursion is at most `max` deep however deeply
// the value nests (a dump of the whole value would recurse as deep as the value).
void append_bounded(const nlohmann::json& value, std::string& out, size_t max) {
  const auto scalar = [](const nlohmann::json& v) {
    return v.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  };
  if (value.is_array()) {
    out += '[';
    for (auto it = value.begin(); it != value.end() && out.size() <= max; ++it) {
      if (it != value.begin()) out += ',';
      append_bounded(*it, out, max);
    }
    out += ']';
  } else if (value.is_object()) {
    out += '{';
    for (auto it = value.begin(); it != value.end() && out.size() <= max; ++it) {
      if (it != value.begin()) out += ',';
      out += scalar(it.key()) + ':';
      append_bounded(it.value(), out, max);
    }
    out += '}';
  } else {
    out += scalar(value);
  }
}

}  // namespace

std::string json_snippet(const nlohmann::json& value) {
  constexpr size_t kMax = 60;
  std::string text;
  append_bounded(value, text, kMax);
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

JsonFields::JsonFields(const nlohmann::json& object, std::string file, std::string path)
    : object_(object), file_(std::move(file)), path_(std::move(path)) {
  if (!object_.is_object())
    throw Error(file_ + ": " + (path_.empty() ? std::string("the file") : path_) +
                ": expected a JSON object, got " + json_snippet(object_));
}

std::string JsonFields::where(std::string_view key) const {
  std::string w = file_ + ": ";
  if (!path_.empty()) w += path_ + ".";
  return w + std::string(key);
}

void JsonFields::fail(std::string_view key, const std::string& message) const {
  throw Error(where(key) + ": " + message);
}

bool JsonFields::has(std::string_view key) const { return find(key) != nullptr; }

const nlohmann::json* JsonFields::find(std::string_view key) const {
  const auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

JsonFields JsonFields::object(std::string_view key) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) fail(key, "missing");
  if (!value->is_object()) fail(key, "expected an object, got " + json_snippet(*value));
  return JsonFields(*value, file_,
                    path_.empty() ? std::string(key) : path_ + "." + std::string(key));
}

std::optional<int64_t> JsonFields::integer(std::string_view key) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (value->is_number_unsigned()) {
    const uint64_t u = value->get<uint64_t>();
    if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return static_cast<int64_t>(u);
  } else if (value->is_number_integer()) {
    return value->get<int64_t>();
  } else if (value->is_number_float()) {
    // Python writes whole floats (4.0) for some integer fields. The range check comes first:
    // converting an out-of-range double to an integer is undefined behaviour.
    const double d = value->get<double>();
    if (d > -9.2e18 && d < 9.2e18 && d == std::trunc(d)) return static_cast<int64_t>(d);
  }
  fail(key, "expected an integer, got " + json_snippet(*value));
}

std::optional<double> JsonFields::number(std::string_view key) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_number()) fail(key, "expected a number, got " + json_snippet(*value));
  return value->get<double>();
}

std::vector<double> JsonFields::numbers(std::string_view key) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) return {};
  if (!value->is_array()) fail(key, "expected a list of numbers, got " + json_snippet(*value));
  std::vector<double> out;
  for (const nlohmann::json& v : *value) {
    if (!v.is_number()) fail(key, "expected a list of numbers, got " + json_snippet(*value));
    out.push_back(v.get<double>());
  }
  return out;
}

std::optional<bool> JsonFields::boolean(std::string_view key) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_boolean()) fail(key, "expected true or false, got " + json_snippet(*value));
  return value->get<bool>();
}

std::optional<std::string> JsonFields::string(std::string_view key) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_string()) fail(key, "expected a string, got " + json_snippet(*value));
  return value->get<std::string>();
}

int64_t JsonFields::required_integer(std::string_view key) const {
  const auto value = integer(key);
  if (!value) fail(key, "missing");
  return *value;
}

std::string JsonFields::required_string(std::string_view key) const {
  auto value = string(key);
  if (!value) fail(key, "missing");
  return *value;
}

}  // namespace dq4::io
