#include "json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "text.h"

namespace dq4::jinja {

Value from_json(const nlohmann::ordered_json& json) {
  // Containers check their nesting as they are built, bottom-up; stop runaway input before the
  // recursion gets there.
  struct DepthGuard {
    int& depth;
    explicit DepthGuard(int& d) : depth(d) {
      if (++depth > Value::kMaxNesting)
        throw TemplateError("JSON nested more than " + std::to_string(Value::kMaxNesting) +
                            " levels deep");
    }
    ~DepthGuard() { --depth; }
  };
  thread_local int depth = 0;
  const DepthGuard guard(depth);
  using Type = nlohmann::ordered_json::value_t;
  switch (json.type()) {
    case Type::null:
      return Value::none();
    case Type::boolean:
      return Value(json.get<bool>());
    case Type::number_integer:
      return Value(json.get<int64_t>());
    case Type::number_unsigned: {
      const auto u = json.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<int64_t>(u));
      return Value(static_cast<double>(u));
    }
    case Type::number_float:
      return Value(json.get<double>());
    case Type::string:
      return Value(json.get<std::string>());
    case Type::array: {
      ValueList items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(from_json(item));
      return Value(std::move(items));
    }
    case Type::object: {
      ValueDict dict;
      for (const auto& [key, item] : json.items()) dict.set(key, from_json(item));
      return Value(std::move(dict));
    }
    default:
      throw TemplateError("JSON value of an unsupported type (binary)");
  }
}

namespace {

void append_json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (const char32_t c : decode_utf8(s)) {
    char hex[16];
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || (ensure_ascii && c >= 0x7f)) {
          if (c >= 0x10000) {  // a surrogate pair, as Python writes astral characters
            const char32_t v = c - 0x10000;
            std::snprintf(hex, sizeof hex, "\\u%04x\\u%04x",
                          static_cast<unsigned>(0xd800 + (v >> 10)),
                          static_cast<unsigned>(0xdc00 + (v & 0x3ff)));
          } else {
            std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned>(c));
          }
          out += hex;
        } else {
          append_utf8(out, c);
        }
    }
  }
  out += '"';
}

void write(std::string& out, const Value& v, const JsonStyle& style, int depth) {
  auto newline = [&](int level) {
    if (!style.pretty) return;
    out += '\n';
    for (int i = 0; i < level; ++i) out += style.indent;
  };
  switch (v.kind()) {
    case Value::Kind::kNone:
      out += "null";
      return;
    case Value::Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::kFloat: {
      const double f = v.as_double();
      if (std::isnan(f))
        out += "NaN";
      else if (std::isinf(f))
        out += f > 0 ? "Infinity" : "-Infinity";
      else
        out += float_repr(f);
      return;
    }
    case Value::Kind::kString:
      append_json_string(out, v.as_string(), style.ensure_ascii);
      return;
    case Value::Kind::kList: {
      const ValueList& items = v.as_list();
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += style.item_separator;
        newline(depth + 1);
        write(out, items[i], style, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::kDict: {
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& entry : v.as_dict().entries()) entries.push_back(&entry);
      if (entries.empty()) {
        out += "{}";
        return;
      }
      if (style.sort_keys)
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto* a, const auto* b) { return a->first < b->first; });
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += style.item_separator;
        newline(depth + 1);
        append_json_string(out, entries[i]->first, style.ensure_ascii);
        out += style.key_separator;
        write(out, entries[i]->second, style, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
    default:
      throw TemplateError("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  write(out, v, style, 0);
  return out;
}

}  // namespace dq4::jinja
