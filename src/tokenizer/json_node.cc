#include "json_node.h"

#include "dq4/kernels/error.h"
#include "utf8.h"

namespace dq4::tokenizer {

std::string JsonNode::where() const { return *file_ + ": " + (path_.empty() ? "(top)" : path_); }

void JsonNode::fail(const std::string& what) const { throw Error(where() + ": " + what); }

bool JsonNode::has(const char* key) const {
  if (!value_->is_object()) fail("expected a JSON object");
  const auto it = value_->find(key);
  return it != value_->end() && !it->is_null();
}

JsonNode JsonNode::at(const char* key) const {
  if (!value_->is_object()) fail("expected a JSON object");
  const auto it = value_->find(key);
  const std::string path = path_.empty() ? key : path_ + "." + key;
  if (it == value_->end()) throw Error(*file_ + ": " + path + ": missing");
  return JsonNode(*it, *file_, path);
}

JsonNode JsonNode::at(size_t index) const {
  if (!value_->is_array()) fail("expected a JSON array");
  if (index >= value_->size()) fail("index " + std::to_string(index) + " out of range");
  return JsonNode((*value_)[index], *file_, path_ + "[" + std::to_string(index) + "]");
}

size_t JsonNode::size() const {
  if (!value_->is_array()) fail("expected a JSON array");
  return value_->size();
}

std::string JsonNode::as_string() const {
  if (!value_->is_string()) fail("expected a string");
  return value_->get<std::string>();
}

char32_t JsonNode::as_char() const {
  const std::string s = as_string();
  size_t pos = 0;
  if (s.empty() || (next_code_point(s, pos), pos != s.size()))
    fail("expected a string of exactly one character, got \"" + s + "\"");
  pos = 0;
  return next_code_point(s, pos);
}

bool JsonNode::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false");
  return value_->get<bool>();
}

int64_t JsonNode::as_int() const {
  if (!value_->is_number_integer()) fail("expected an integer");
  return value_->get<int64_t>();
}

std::string JsonNode::get_string(const char* key, const std::string& fallback) const {
  return has(key) ? at(key).as_string() : fallback;
}

bool JsonNode::get_bool(const char* key, bool fallback) const {
  return has(key) ? at(key).as_bool() : fallback;
}

int64_t JsonNode::get_int(const char* key, int64_t fallback) const {
  return has(key) ? at(key).as_int() : fallback;
}

void JsonNode::unsupported(const char* component) const {
  fail(std::string("unsupported ") + component + " type \"" + type() + "\"");
}

}  // namespace dq4::tokenizer
