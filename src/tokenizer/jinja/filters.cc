// Jinja2's built-in filters as Python Jinja2 3.1 computes them, and transformers' `tojson`
// (json.dumps with ensure_ascii=False, optional indent, separators and sort_keys).

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "builtins.h"
#include "json.h"
#include "text.h"

namespace dq4::jinja {
namespace {

using Filter = Value (*)(const Value& v, const CallArgs& args, Budget& budget);

const Value* optional_arg(const CallArgs& args, size_t index, const char* name) {
  const Value* v = args.get(index, name);
  return v == nullptr || v->is_undefined() ? nullptr : v;
}

bool flag_arg(const CallArgs& args, size_t index, const char* name) {
  const Value* v = optional_arg(args, index, name);
  return v != nullptr && truthy(*v);
}

std::string string_arg(const CallArgs& args, size_t index, const char* name, const char* what) {
  const Value& v = required_arg(args, index, name, what);
  if (!v.is_string())
    throw TemplateError(std::string(what) + ": '" + name + "' must be a string, not " +
                        type_name(v));
  return v.as_string();
}

Value checked(std::string s, const Budget& budget) {
  budget.check_size(s.size());
  return Value(std::move(s));
}

// An attribute path as map/selectattr/sort take it: "a.b.0".
Value lookup_path(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (v.is_dict() || v.is_namespace()) {
      const Value* found = (v.is_dict() ? v.as_dict() : v.as_namespace()).find(part);
      v = found != nullptr ? *found : Value::undefined("no attribute '" + part + "'");
    } else if (v.is_list() && !part.empty() &&
               part.find_first_not_of("0123456789") == std::string::npos && part.size() < 10) {
      const size_t index = std::stoul(part);
      v = index < v.as_list().size() ? v.as_list()[index]
                                     : Value::undefined("index " + part + " out of range");
    } else {
      v = Value::undefined("no attribute '" + part + "'");
    }
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

// Case-insensitive comparisons lower-case strings first, as Jinja2's ignore_case does.
Value sort_key(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value(to_lower(v.as_string())) : v;
}

ValueList sorted(ValueList items, bool reverse, bool case_sensitive, const Value* attribute) {
  auto key = [&](const Value& v) {
    return sort_key(attribute ? lookup_path(v, to_str(*attribute)) : v, case_sensitive);
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    return reverse ? compare(key(b), key(a)) < 0 : compare(key(a), key(b)) < 0;
  });
  return items;
}

Value do_length(const Value& v, const CallArgs&, Budget&) {
  if (v.is_string()) return Value(utf8_length(v.as_string()));
  if (v.is_list()) return Value(static_cast<int64_t>(v.as_list().size()));
  if (v.is_dict()) return Value(static_cast<int64_t>(v.as_dict().size()));
  if (v.is_undefined()) return Value(0);
  throw TemplateError("object of type '" + type_name(v) + "' has no len()");
}

Value do_trim(const Value& v, const CallArgs& args, Budget&) {
  const Value* chars = optional_arg(args, 0, "chars");
  const std::string chars_text = chars && !chars->is_none() ? to_str(*chars) : "";
  return Value(
      strip(to_str(v), StripSide::kBoth, chars && !chars->is_none() ? &chars_text : nullptr));
}

Value do_tojson(const Value& v, const CallArgs& args, Budget& budget) {
  JsonStyle style;
  style.ensure_ascii = flag_arg(args, 0, "ensure_ascii");
  if (const Value* indent = optional_arg(args, 1, "indent"); indent && !indent->is_none()) {
    style.pretty = true;
    if (indent->is_string()) {
      style.indent = indent->as_string();
    } else if (indent->is_number() && !indent->is_float()) {
      style.indent =
          std::string(static_cast<size_t>(std::clamp<int64_t>(indent->as_int(), 0, 64)), ' ');
    } else {
      throw TemplateError("tojson: indent must be an integer or a string");
    }
    style.item_separator = ",";
  }
  if (const Value* separators = optional_arg(args, 2, "separators");
      separators && !separators->is_none()) {
    if (!separators->is_list() || separators->as_list().size() != 2 ||
        !separators->as_list()[0].is_string() || !separators->as_list()[1].is_string())
      throw TemplateError("tojson: separators must be a pair of strings");
    style.item_separator = separators->as_list()[0].as_string();
    style.key_separator = separators->as_list()[1].as_string();
  }
  style.sort_keys = flag_arg(args, 3, "sort_keys");
  return checked(to_json(v, style), budget);
}

Value do_join(const Value& v, const CallArgs& args, Budget& budget) {
  const Value* separator = optional_arg(args, 0, "d");
  const Value* attribute = optional_arg(args, 1, "attribute");
  const std::string sep = separator ? to_str(*separator) : "";
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += to_str(attribute ? lookup_path(item, to_str(*attribute)) : item);
    budget.check_size(out.size());
  }
  return Value(std::move(out));
}

Value do_default(const Value& v, const CallArgs& args, Budget&) {
  const Value* fallback = args.get(0, "default_value");
  const bool boolean = flag_arg(args, 1, "boolean");
  if (v.is_undefined() || (boolean && !truthy(v))) return fallback ? *fallback : Value("");
  return v;
}

// Python's int(text, base), then int(float(text)), as Jinja2's int filter tries them.
bool parse_int(const std::string& raw, int base, int64_t* out) {
  const std::string text = strip(raw, StripSide::kBoth, nullptr);
  std::string digits;
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] != '_' || (i > 0 && i + 1 < text.size())) digits += text[i];
  if (digits.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(digits.c_str(), &end, base);
  if (*end == '\0' && errno == 0) {
    *out = v;
    return true;
  }
  errno = 0;
  const double f = std::strtod(digits.c_str(), &end);
  if (*end != '\0' || errno != 0) return false;
  const std::optional<int64_t> whole = truncate_to_int(f);
  if (!whole) return false;
  *out = *whole;
  return true;
}

Value do_int(const Value& v, const CallArgs& args, Budget&) {
  const Value* fallback = optional_arg(args, 0, "default");
  const Value* base = optional_arg(args, 1, "base");
  const Value result_default = fallback ? *fallback : Value(0);
  if (v.is_number()) {
    if (!v.is_float()) return Value(v.as_int());
    const std::optional<int64_t> whole = truncate_to_int(v.as_double());
    return whole ? Value(*whole) : result_default;
  }
  if (!v.is_string()) return result_default;
  int64_t parsed = 0;
  const int b = base && base->is_number() ? static_cast<int>(base->as_int()) : 10;
  if (b < 0 || b == 1 || b > 36) throw TemplateError("int: base must be 0 or 2..36");
  return parse_int(v.as_string(), b, &parsed) ? Value(parsed) : result_default;
}

Value do_float(const Value& v, const CallArgs& args, Budget&) {
  const Value* fallback = optional_arg(args, 0, "default");
  const Value result_default = fallback ? *fallback : Value(0.0);
  if (v.is_number()) return Value(v.as_double());
  if (!v.is_string()) return result_default;
  const std::string text = strip(v.as_string(), StripSide::kBoth, nullptr);
  char* end = nullptr;
  const double f = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') return result_default;
  return Value(f);
}

Value first_or_last(const Value& v, bool first) {
  const ValueList items = iterate(v);
  if (items.empty())
    return Value::undefined(std::string("no ") + (first ? "first" : "last") +
                            " item, sequence was empty");
  return first ? items.front() : items.back();
}

Value do_items(const Value& v, const CallArgs&, Budget&) {
  if (v.is_undefined()) return Value(ValueList{});
  if (!v.is_dict()) throw TemplateError("items: expected a dict, got " + type_name(v));
  ValueList pairs;
  for (const auto& [k, item] : v.as_dict().entries())
    pairs.emplace_back(ValueList{Value(k), item}, true);
  return Value(std::move(pairs));
}

Value do_dictsort(const Value& v, const CallArgs& args, Budget& budget) {
  const bool case_sensitive = flag_arg(args, 0, "case_sensitive");
  const Value* by = optional_arg(args, 1, "by");
  const bool by_value = by && to_str(*by) == "value";
  if (by && !by_value && to_str(*by) != "key")
    throw TemplateError("dictsort: 'by' must be 'key' or 'value'");
  const Value pairs = do_items(v, {}, budget);
  const Value index(by_value ? "1" : "0");
  return Value(sorted(pairs.as_list(), flag_arg(args, 2, "reverse"), case_sensitive, &index));
}

Value do_map(const Value& v, const CallArgs& args, Budget& budget) {
  ValueList out;
  const ValueList items = iterate(v);
  if (const Value* attribute = args.get(SIZE_MAX, "attribute")) {
    const Value* fallback = args.get(SIZE_MAX, "default");
    for (const Value& item : items) {
      Value mapped = lookup_path(item, to_str(*attribute));
      out.push_back(mapped.is_undefined() && fallback ? *fallback : mapped);
    }
    return Value(std::move(out));
  }
  const std::string filter = string_arg(args, 0, "filter", "map");
  if (!is_filter(filter)) throw TemplateError("map: no filter named '" + filter + "'");
  CallArgs rest{ValueList(args.positional.begin() + 1, args.positional.end()), args.keyword};
  for (const Value& item : items) {
    budget.spend(1);
    out.push_back(apply_filter(filter, item, rest, budget));
  }
  return Value(std::move(out));
}

// select/reject (test on the item) and selectattr/rejectattr (test on an attribute).
Value select_items(const Value& v, const CallArgs& args, bool keep, bool on_attribute,
                   Budget& budget) {
  size_t next = 0;
  std::string attribute;
  if (on_attribute) attribute = string_arg(args, next++, "attribute", "selectattr");
  const Value* test = args.get(next++, "test_name");
  if (test && !test->is_string()) throw TemplateError("select: the test name must be a string");
  if (test && !is_test(test->as_string()))
    throw TemplateError("select: no test named '" + test->as_string() + "'");
  CallArgs test_args;
  if (args.positional.size() > next)
    test_args.positional.assign(args.positional.begin() + next, args.positional.end());
  ValueList out;
  for (const Value& item : iterate(v)) {
    budget.spend(1);
    const Value subject = on_attribute ? lookup_path(item, attribute) : item;
    const bool passed = test ? apply_test(test->as_string(), subject, test_args) : truthy(subject);
    if (passed == keep) out.push_back(item);
  }
  return Value(std::move(out));
}

Value do_sort(const Value& v, const CallArgs& args, Budget& budget) {
  ValueList items = iterate(v);
  budget.spend(items.size());
  return Value(sorted(std::move(items), flag_arg(args, 0, "reverse"),
                      flag_arg(args, 1, "case_sensitive"), optional_arg(args, 2, "attribute")));
}

Value do_unique(const Value& v, const CallArgs& args, Budget& budget) {
  const bool case_sensitive = flag_arg(args, 0, "case_sensitive");
  const Value* attribute = optional_arg(args, 1, "attribute");
  ValueList out, seen;
  for (const Value& item : iterate(v)) {
    budget.spend(seen.size() + 1);
    const Value key =
        sort_key(attribute ? lookup_path(item, to_str(*attribute)) : item, case_sensitive);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); }))
      continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value(std::move(out));
}

Value min_or_max(const Value& v, const CallArgs& args, bool want_max) {
  const bool case_sensitive = flag_arg(args, 0, "case_sensitive");
  const Value* attribute = optional_arg(args, 1, "attribute");
  const ValueList items = iterate(v);
  if (items.empty()) return Value::undefined("no min/max item, sequence was empty");
  const Value* best = &items[0];
  auto key = [&](const Value& item) {
    return sort_key(attribute ? lookup_path(item, to_str(*attribute)) : item, case_sensitive);
  };
  for (const Value& item : items) {
    const int c = compare(key(item), key(*best));
    if (want_max ? c > 0 : c < 0) best = &item;
  }
  return *best;
}

Value do_sum(const Value& v, const CallArgs& args, Budget&) {
  const Value* attribute = optional_arg(args, 0, "attribute");
  const Value* start = optional_arg(args, 1, "start");
  bool is_float = start && start->is_float();
  int64_t int_total = start ? start->as_int() : 0;
  double float_total = start ? start->as_double() : 0.0;
  if (start && !start->is_number()) throw TemplateError("sum: start must be a number");
  for (const Value& raw : iterate(v)) {
    const Value item = attribute ? lookup_path(raw, to_str(*attribute)) : raw;
    if (!item.is_number())
      throw TemplateError("unsupported operand type(s) for +: 'int' and '" + type_name(item) + "'");
    if (item.is_float() && !is_float) {
      is_float = true;
      float_total = static_cast<double>(int_total);
    }
    if (is_float) {
      float_total += item.as_double();
    } else if (__builtin_add_overflow(int_total, item.as_int(), &int_total)) {
      throw TemplateError("integer overflow in sum");
    }
  }
  return is_float ? Value(float_total) : Value(int_total);
}

Value do_round(const Value& v, const CallArgs& args, Budget&) {
  if (!v.is_number()) throw TemplateError("round: expected a number, got " + type_name(v));
  const Value* precision_arg = optional_arg(args, 0, "precision");
  const int precision =
      precision_arg ? static_cast<int>(std::clamp<int64_t>(precision_arg->as_int(), -20, 20)) : 0;
  const Value* method_arg = optional_arg(args, 1, "method");
  const std::string method = method_arg ? to_str(*method_arg) : "common";
  const double x = v.as_double();
  const double scale = std::pow(10.0, precision);
  if (method == "ceil") return Value(std::ceil(x * scale) / scale);
  if (method == "floor") return Value(std::floor(x * scale) / scale);
  if (method != "common") throw TemplateError("round: method must be common, ceil or floor");
  if (precision <= 0) return Value(std::nearbyint(x * scale) / scale);  // half to even
  // Python rounds the exact binary value correctly, as printf does.
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, "%.*f", precision, x);
  return Value(std::strtod(buffer, nullptr));
}

Value do_abs(const Value& v, const CallArgs&, Budget&) {
  if (v.is_float()) return Value(std::fabs(v.as_double()));
  if (!v.is_number()) throw TemplateError("bad operand type for abs(): '" + type_name(v) + "'");
  if (v.as_int() == INT64_MIN) throw TemplateError("integer overflow in abs");
  return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
}

Value do_replace(const Value& v, const CallArgs& args, Budget& budget) {
  const std::string text = to_str(v);
  const std::string old = string_arg(args, 0, "old", "replace");
  const std::string replacement = string_arg(args, 1, "new", "replace");
  const Value* count_arg = optional_arg(args, 2, "count");
  int64_t count = count_arg && !count_arg->is_none() ? count_arg->as_int() : -1;
  std::string out;
  if (old.empty()) {  // Python inserts the replacement around every character
    const std::vector<char32_t> cps = decode_utf8(text);
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count != 0) {
        out += replacement;
        --count;
      }
      if (i < cps.size()) append_utf8(out, cps[i]);
      budget.check_size(out.size());
    }
    return Value(std::move(out));
  }
  size_t pos = 0;
  for (size_t hit; count != 0 && (hit = text.find(old, pos)) != std::string::npos; --count) {
    out.append(text, pos, hit - pos);
    out += replacement;
    pos = hit + old.size();
    budget.check_size(out.size());
  }
  out.append(text, pos, std::string::npos);
  return checked(std::move(out), budget);
}

Value do_indent(const Value& v, const CallArgs& args, Budget& budget) {
  const Value* width = optional_arg(args, 0, "width");
  std::string indentation = "    ";
  if (width && width->is_string()) {
    indentation = width->as_string();
  } else if (width) {
    indentation =
        std::string(static_cast<size_t>(std::clamp<int64_t>(width->as_int(), 0, 256)), ' ');
  }
  const bool first = flag_arg(args, 1, "first");
  const bool blank = flag_arg(args, 2, "blank");
  std::vector<std::string> lines = split_lines(to_str(v) + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += '\n';
    const bool indent_line = i == 0 ? first : (blank || !lines[i].empty());
    if (indent_line) out += indentation;
    out += lines[i];
    budget.check_size(out.size());
  }
  return Value(std::move(out));
}

// Jinja2's title filter: words begin after spaces, '-', and opening brackets.
std::string jinja_title(const std::string& s) {
  std::string out;
  bool word_start = true;
  for (const char c : s) {
    const bool boundary = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' ||
                          is_python_space(static_cast<unsigned char>(c));
    if (boundary) {
      out += c;
      word_start = true;
    } else {
      out += static_cast<char>(word_start ? std::toupper(static_cast<unsigned char>(c))
                                          : std::tolower(static_cast<unsigned char>(c)));
      word_start = false;
    }
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Value reversed(const Value& v) {
  if (v.is_string()) {
    std::vector<char32_t> cps = decode_utf8(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return Value(encode_utf8(cps));
  }
  ValueList items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value(std::move(items));
}

const std::map<std::string, Filter>& filters() {
  static const std::map<std::string, Filter> kFilters = {
      {"abs", do_abs},
      {"capitalize",
       [](const Value& v, const CallArgs&, Budget&) { return Value(capitalize(to_str(v))); }},
      {"count", do_length},
      {"default", do_default},
      {"d", do_default},
      {"dictsort", do_dictsort},
      {"escape",
       [](const Value& v, const CallArgs&, Budget&) { return Value(html_escape(to_str(v))); }},
      {"e", [](const Value& v, const CallArgs&, Budget&) { return Value(html_escape(to_str(v))); }},
      {"first", [](const Value& v, const CallArgs&, Budget&) { return first_or_last(v, true); }},
      {"float", do_float},
      {"indent", do_indent},
      {"int", do_int},
      {"items", do_items},
      {"join", do_join},
      {"last", [](const Value& v, const CallArgs&, Budget&) { return first_or_last(v, false); }},
      {"length", do_length},
      {"list", [](const Value& v, const CallArgs&, Budget&) { return Value(iterate(v)); }},
      {"lower",
       [](const Value& v, const CallArgs&, Budget&) { return Value(to_lower(to_str(v))); }},
      {"map", do_map},
      {"max", [](const Value& v, const CallArgs& a, Budget&) { return min_or_max(v, a, true); }},
      {"min", [](const Value& v, const CallArgs& a, Budget&) { return min_or_max(v, a, false); }},
      {"reject", [](const Value& v, const CallArgs& a,
                    Budget& b) { return select_items(v, a, false, false, b); }},
      {"rejectattr", [](const Value& v, const CallArgs& a,
                        Budget& b) { return select_items(v, a, false, true, b); }},
      {"replace", do_replace},
      {"reverse", [](const Value& v, const CallArgs&, Budget&) { return reversed(v); }},
      {"round", do_round},
      {"safe", [](const Value& v, const CallArgs&, Budget&) { return v; }},
      {"select", [](const Value& v, const CallArgs& a,
                    Budget& b) { return select_items(v, a, true, false, b); }},
      {"selectattr", [](const Value& v, const CallArgs& a,
                        Budget& b) { return select_items(v, a, true, true, b); }},
      {"sort", do_sort},
      {"string", [](const Value& v, const CallArgs&, Budget&) { return Value(to_str(v)); }},
      {"sum", do_sum},
      {"title",
       [](const Value& v, const CallArgs&, Budget&) { return Value(jinja_title(to_str(v))); }},
      {"tojson", do_tojson},
      {"trim", do_trim},
      {"unique", do_unique},
      {"upper",
       [](const Value& v, const CallArgs&, Budget&) { return Value(to_upper(to_str(v))); }},
  };
  return kFilters;
}

}  // namespace

bool is_filter(const std::string& name) { return filters().count(name) != 0; }

Value apply_filter(const std::string& name, const Value& operand, const CallArgs& args,
                   Budget& budget) {
  const auto it = filters().find(name);
  if (it == filters().end()) throw TemplateError("no filter named '" + name + "'");
  return it->second(operand, args, budget);
}

}  // namespace dq4::jinja
