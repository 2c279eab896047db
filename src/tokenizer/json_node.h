#pragma once
// Read access to tokenizer.json that knows where it is: every error names the file and the JSON
// path of the field at fault (e.g. "tokenizer.json: pre_tokenizer.pretokenizers[1].pattern").

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace dq4::tokenizer {

class JsonNode {
 public:
  JsonNode(const nlohmann::json& value, const std::string& file, std::string path)
      : value_(&value), file_(&file), path_(std::move(path)) {}

  const nlohmann::json& value() const { return *value_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }
  // "file: path" for messages.
  std::string where() const;
  [[noreturn]] void fail(const std::string& what) const;

  bool is_null() const { return value_->is_null(); }
  // True when the key is present with a non-null value.
  bool has(const char* key) const;
  JsonNode at(const char* key) const;  // required; also requires this to be an object
  JsonNode at(size_t index) const;     // requires an array
  size_t size() const;                 // of an array

  std::string as_string() const;
  // Strings made of exactly one code point (HF's `char` fields).
  char32_t as_char() const;
  bool as_bool() const;
  int64_t as_int() const;

  std::string get_string(const char* key) const { return at(key).as_string(); }
  std::string get_string(const char* key, const std::string& fallback) const;
  bool get_bool(const char* key, bool fallback) const;
  int64_t get_int(const char* key, int64_t fallback) const;
  // The "type" member of a component object.
  std::string type() const { return get_string("type"); }
  [[noreturn]] void unsupported(const char* component) const;

 private:
  const nlohmann::json* value_;
  const std::string* file_;
  std::string path_;
};

}  // namespace dq4::tokenizer
