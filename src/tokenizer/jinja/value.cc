#include "value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "text.h"

namespace dq4::jinja {

ValueDict::ValueDict(std::vector<std::pair<std::string, Value>> entries)
    : entries_(std::move(entries)) {}

size_t ValueDict::size() const { return entries_.size(); }

const Value* ValueDict::find(std::string_view key) const {
  for (const auto& [k, v] : entries_)
    if (k == key) return &v;
  return nullptr;
}

void ValueDict::set(std::string key, Value value) {
  for (auto& [k, v] : entries_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  return nullptr;
}

namespace {

int checked_nesting(int deepest_item) {
  if (deepest_item + 1 > Value::kMaxNesting)
    throw TemplateError("values nested more than " + std::to_string(Value::kMaxNesting) +
                        " levels deep");
  return deepest_item + 1;
}

}  // namespace

Value::Value(ValueList list, bool is_tuple) {
  int deepest = 0;
  for (const Value& item : list) deepest = std::max(deepest, item.nesting());
  const int nesting = checked_nesting(deepest);
  data_ = ListData{std::make_shared<const ValueList>(std::move(list)), is_tuple, nesting};
}

Value::Value(ValueDict dict) {
  int deepest = 0;
  for (const auto& [k, item] : dict.entries()) deepest = std::max(deepest, item.nesting());
  const int nesting = checked_nesting(deepest);
  data_ = DictData{std::make_shared<const ValueDict>(std::move(dict)), nesting};
}

int Value::nesting() const {
  if (is_list()) return std::get<ListData>(data_).nesting;
  if (is_dict()) return std::get<DictData>(data_).nesting;
  return 0;
}

Value Value::make_namespace(ValueDict dict) {
  return Value(NamespaceData{std::make_shared<ValueDict>(std::move(dict))}, 0);
}

Value Value::function(std::string name, Function f) {
  return Value(FunctionData{std::move(name), std::make_shared<const Function>(std::move(f))}, 0);
}

double Value::as_double() const {
  if (is_float()) return std::get<double>(data_);
  return static_cast<double>(as_int());
}

bool Value::same_as(const Value& other) const {
  if (kind() != other.kind()) return false;
  switch (kind()) {
    case Kind::kList:
      return std::get<ListData>(data_).items == std::get<ListData>(other.data_).items;
    case Kind::kDict:
      return std::get<DictData>(data_).dict == std::get<DictData>(other.data_).dict;
    case Kind::kNamespace:
      return std::get<NamespaceData>(data_).dict == std::get<NamespaceData>(other.data_).dict;
    case Kind::kFunction:
      return std::get<FunctionData>(data_).f == std::get<FunctionData>(other.data_).f;
    default:
      return equals(*this, other);
  }
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return "str";
    case Value::Kind::kList:
      return v.is_tuple() ? "tuple" : "list";
    case Value::Kind::kDict:
      return "dict";
    case Value::Kind::kNamespace:
      return "Namespace";
    case Value::Kind::kFunction:
      return "function";
  }
  return "?";
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return v.as_bool();
    case Value::Kind::kInt:
      return v.as_int() != 0;
    case Value::Kind::kFloat:
      return v.as_double() != 0.0;
    case Value::Kind::kString:
      return !v.as_string().empty();
    case Value::Kind::kList:
      return !v.as_list().empty();
    case Value::Kind::kDict:
      return v.as_dict().size() != 0;
    case Value::Kind::kNamespace:
    case Value::Kind::kFunction:
      return true;
  }
  return false;
}

std::optional<int64_t> truncate_to_int(double f) {
  // The range check comes first: converting an out-of-range double is undefined behaviour.
  if (!(std::fabs(f) < 9.2e18)) return std::nullopt;
  return static_cast<int64_t>(f);
}

std::string float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then laid out as Python's repr does (fixed for 1e-4 <= |f| <
  // 1e16, else exponent form).
  char buffer[64];
  const auto result =
      std::to_chars(buffer, buffer + sizeof buffer, f, std::chars_format::scientific);
  std::string text(buffer, result.ptr);
  std::string sign;
  if (text[0] == '-') {
    sign = "-";
    text.erase(0, 1);
  }
  const size_t e = text.find('e');
  std::string digits = text.substr(0, e);
  const int exponent = std::stoi(text.substr(e + 1));
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int point = exponent + 1;  // digits before the decimal point
  if (exponent >= -4 && exponent < 16) {
    std::string out;
    if (point <= 0) {
      out = "0." + std::string(-point, '0') + digits;
    } else if (point >= static_cast<int>(digits.size())) {
      out = digits + std::string(point - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, point) + "." + digits.substr(point);
    }
    return sign + out;
  }
  std::string mantissa = digits.substr(0, 1);
  if (digits.size() > 1) mantissa += "." + digits.substr(1);
  char exp_text[16];
  std::snprintf(exp_text, sizeof exp_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return sign + mantissa + exp_text;
}

namespace {

std::string string_repr(const std::string& s) {
  const bool use_double = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char quote = use_double ? '"' : '\'';
  std::string out(1, quote);
  for (const char32_t c : decode_utf8(s)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || (c >= 0x7f && c <= 0xa0) || c == 0xad) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(c));
      out += hex;
    } else {
      append_utf8(out, c);
    }
  }
  out += quote;
  return out;
}

}  // namespace

std::string repr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kString:
      return string_repr(v.as_string());
    case Value::Kind::kList: {
      const bool tuple = v.is_tuple();
      std::string out = tuple ? "(" : "[";
      const ValueList& items = v.as_list();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += repr(items[i]);
      }
      if (tuple && items.size() == 1) out += ",";
      return out + (tuple ? ")" : "]");
    }
    case Value::Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, item] : v.as_dict().entries()) {
        if (!first) out += ", ";
        first = false;
        out += string_repr(k) + ": " + repr(item);
      }
      return out + "}";
    }
    case Value::Kind::kNamespace:
      return "<Namespace>";
    case Value::Kind::kFunction:
      return "<function " + v.function_name() + ">";
    default:
      return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(v.as_int());
    case Value::Kind::kFloat:
      return float_repr(v.as_double());
    case Value::Kind::kString:
      return v.as_string();
    default:
      return repr(v);
  }
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      const ValueList &x = a.as_list(), &y = b.as_list();
      if (x.size() != y.size() || a.is_tuple() != b.is_tuple()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!equals(x[i], y[i])) return false;
      return true;
    }
    case Value::Kind::kDict: {
      const ValueDict &x = a.as_dict(), &y = b.as_dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, item] : x.entries()) {
        const Value* other = y.find(k);
        if (other == nullptr || !equals(item, *other)) return false;
      }
      return true;
    }
    default:
      return a.same_as(b);
  }
}

int compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    const int64_t x = a.as_int(), y = b.as_int();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order is code point order, which is Python's string order.
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list()) {
    const ValueList &x = a.as_list(), &y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  throw TemplateError("'<' not supported between instances of '" + type_name(a) + "' and '" +
                      type_name(b) + "'");
}

ValueList iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList:
      return v.as_list();
    case Value::Kind::kDict:
    case Value::Kind::kNamespace: {
      ValueList keys;
      const ValueDict& dict = v.is_dict() ? v.as_dict() : v.as_namespace();
      for (const auto& [k, item] : dict.entries()) keys.emplace_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      ValueList chars;
      for (const char32_t c : decode_utf8(v.as_string())) {
        std::string s;
        append_utf8(s, c);
        chars.emplace_back(std::move(s));
      }
      return chars;
    }
    default:
      throw TemplateError("'" + type_name(v) + "' object is not iterable");
  }
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string())
        throw TemplateError("'in <string>' requires string as left operand, not " +
                            type_name(item));
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& x : container.as_list())
        if (equals(x, item)) return true;
      return false;
    case Value::Kind::kDict:
      return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    default:
      throw TemplateError("argument of type '" + type_name(container) + "' is not iterable");
  }
}

}  // namespace dq4::jinja
