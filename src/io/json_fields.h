#pragma once
// Typed reads of JSON fields whose errors name the file and the field's path
// ("config.json: quantization_config.config_groups.group_0.weights.num_bits: expected an
// integer, got \"4\"").

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dq4::io {

class JsonFields {
 public:
  // `object` must outlive this reader. Throws when it is not a JSON object.
  JsonFields(const nlohmann::json& object, std::string file, std::string path);

  const std::string& path() const { return path_; }
  const nlohmann::json& json() const { return object_; }
  std::string where(std::string_view key) const;  // "file: path.key"
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;

  bool has(std::string_view key) const;                    // present and not null
  const nlohmann::json* find(std::string_view key) const;  // nullptr when absent or null
  JsonFields object(std::string_view key) const;           // required object

  std::optional<int64_t> integer(std::string_view key) const;  // absent or null: nullopt
  std::optional<double> number(std::string_view key) const;
  std::optional<bool> boolean(std::string_view key) const;
  std::optional<std::string> string(std::string_view key) const;
  std::vector<double> numbers(std::string_view key) const;  // a list of numbers; absent: {}

  int64_t required_integer(std::string_view key) const;
  std::string required_string(std::string_view key) const;

 private:
  const nlohmann::json& object_;
  std::string file_;
  std::string path_;
};

// A short rendering of a JSON value for messages (strings quoted, long values cut): a bounded
// prefix of its text, however large or deeply nested the value.
std::string json_snippet(const nlohmann::json& value);

}  // namespace dq4::io
