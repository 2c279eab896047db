// The Python methods chat templates call: str.strip/split/startswith/format/..., and dict
// get/items/keys/values. Jinja2's sandbox forbids the mutating ones (list.append, dict.update),
// so they are absent here too.

#include <algorithm>
#include <map>

#include "builtins.h"
#include "text.h"

namespace dq4::jinja {
namespace {

using Method = Value (*)(const Value& self, const CallArgs& args, Budget& budget);

const std::string* optional_string(const CallArgs& args, size_t index, const char* name,
                                   const char* what) {
  const Value* v = args.get(index, name);
  if (v == nullptr || v->is_none()) return nullptr;
  if (!v->is_string())
    throw TemplateError(std::string(what) + " arg must be None or str, not " + type_name(*v));
  return &v->as_string();
}

int64_t max_split(const CallArgs& args) {
  const Value* v = args.get(1, "maxsplit");
  return v == nullptr ? -1 : v->as_int();
}

// str.split / str.rsplit with Python's two modes: runs of whitespace, or an exact separator.
Value split(const Value& self, const CallArgs& args, bool from_right) {
  const std::string* sep = optional_string(args, 0, "sep", "split()");
  int64_t limit = max_split(args);
  ValueList parts;
  const std::string& text = self.as_string();
  if (sep != nullptr) {
    if (sep->empty()) throw TemplateError("empty separator");
    std::vector<std::string> pieces;
    if (!from_right) {
      size_t pos = 0;
      for (size_t hit; limit != 0 && (hit = text.find(*sep, pos)) != std::string::npos; --limit) {
        pieces.push_back(text.substr(pos, hit - pos));
        pos = hit + sep->size();
      }
      pieces.push_back(text.substr(pos));
    } else {
      size_t end = text.size();
      for (; limit != 0 && end >= sep->size(); --limit) {
        const size_t hit = text.rfind(*sep, end - sep->size());
        if (hit == std::string::npos) break;
        pieces.insert(pieces.begin(), text.substr(hit + sep->size(), end - hit - sep->size()));
        end = hit;
      }
      pieces.insert(pieces.begin(), text.substr(0, end));
    }
    for (auto& piece : pieces) parts.emplace_back(std::move(piece));
    return Value(std::move(parts));
  }
  std::vector<char32_t> cps = decode_utf8(text);
  if (from_right) std::reverse(cps.begin(), cps.end());
  std::vector<std::vector<char32_t>> words;
  size_t i = 0;
  while (true) {
    while (i < cps.size() && is_python_space(cps[i])) ++i;
    if (i == cps.size()) break;
    if (limit == 0) {  // the rest, with its trailing whitespace, is the last piece
      words.emplace_back(cps.begin() + i, cps.end());
      break;
    }
    const size_t start = i;
    while (i < cps.size() && !is_python_space(cps[i])) ++i;
    words.emplace_back(cps.begin() + start, cps.begin() + i);
    --limit;
  }
  if (from_right) {
    std::reverse(words.begin(), words.end());
    for (auto& w : words) std::reverse(w.begin(), w.end());
  }
  for (const auto& w : words) parts.emplace_back(encode_utf8(w));
  return Value(std::move(parts));
}

bool affix_matches(const Value& self, const CallArgs& args, bool prefix) {
  const Value& affix = required_arg(args, 0, "prefix", prefix ? "startswith()" : "endswith()");
  const std::string& text = self.as_string();
  auto match = [&](const Value& candidate) {
    if (!candidate.is_string())
      throw TemplateError(std::string(prefix ? "startswith" : "endswith") +
                          " first arg must be str or a tuple of str, not " + type_name(candidate));
    const std::string& a = candidate.as_string();
    if (a.size() > text.size()) return false;
    return prefix ? text.compare(0, a.size(), a) == 0
                  : text.compare(text.size() - a.size(), a.size(), a) == 0;
  };
  if (affix.is_list()) {
    for (const Value& candidate : affix.as_list())
      if (match(candidate)) return true;
    return false;
  }
  return match(affix);
}

// str.format with automatic ({}), numbered ({0}) and named ({name}) fields, no format specs.
Value format(const Value& self, const CallArgs& args, Budget& budget) {
  const std::string& pattern = self.as_string();
  std::string out;
  size_t next_auto = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '}') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '}')
        ++i;
      else
        throw TemplateError("Single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = pattern.find('}', i);
    if (close == std::string::npos) throw TemplateError("Single '{' encountered in format string");
    const std::string field = pattern.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!.[") != std::string::npos)
      throw TemplateError("str.format: field '{" + field + "}' uses an unsupported format spec");
    const Value* arg = nullptr;
    if (field.empty()) {
      arg = next_auto < args.positional.size() ? &args.positional[next_auto] : nullptr;
      ++next_auto;
    } else if (field.find_first_not_of("0123456789") == std::string::npos && field.size() < 9) {
      const size_t index = std::stoul(field);
      arg = index < args.positional.size() ? &args.positional[index] : nullptr;
    } else {
      arg = args.get(SIZE_MAX, field);
    }
    if (arg == nullptr) throw TemplateError("str.format: no argument for '{" + field + "}'");
    out += to_str(*arg);
    budget.check_size(out.size());
    i = close;
  }
  return Value(std::move(out));
}

Value find(const Value& self, const CallArgs& args, bool from_right) {
  const Value& needle = required_arg(args, 0, "sub", "find()");
  if (!needle.is_string()) throw TemplateError("find() argument must be str");
  const std::string& text = self.as_string();
  const size_t hit = from_right ? text.rfind(needle.as_string()) : text.find(needle.as_string());
  if (hit == std::string::npos) return Value(-1);
  return Value(utf8_length(std::string_view(text).substr(0, hit)));
}

template <typename Predicate>
Value all_chars(const Value& self, Predicate predicate) {
  const std::vector<char32_t> cps = decode_utf8(self.as_string());
  if (cps.empty()) return Value(false);
  for (const char32_t c : cps)
    if (!predicate(c)) return Value(false);
  return Value(true);
}

bool ascii_digit(char32_t c) { return c >= '0' && c <= '9'; }
bool ascii_alpha(char32_t c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

const std::map<std::string, Method>& string_methods() {
  static const std::map<std::string, Method> kMethods = {
      {"strip",
       [](const Value& s, const CallArgs& a, Budget&) {
         return Value(
             strip(s.as_string(), StripSide::kBoth, optional_string(a, 0, "chars", "strip")));
       }},
      {"lstrip",
       [](const Value& s, const CallArgs& a, Budget&) {
         return Value(
             strip(s.as_string(), StripSide::kLeft, optional_string(a, 0, "chars", "lstrip")));
       }},
      {"rstrip",
       [](const Value& s, const CallArgs& a, Budget&) {
         return Value(
             strip(s.as_string(), StripSide::kRight, optional_string(a, 0, "chars", "rstrip")));
       }},
      {"split", [](const Value& s, const CallArgs& a, Budget&) { return split(s, a, false); }},
      {"rsplit", [](const Value& s, const CallArgs& a, Budget&) { return split(s, a, true); }},
      {"startswith",
       [](const Value& s, const CallArgs& a, Budget&) { return Value(affix_matches(s, a, true)); }},
      {"endswith", [](const Value& s, const CallArgs& a,
                      Budget&) { return Value(affix_matches(s, a, false)); }},
      {"upper",
       [](const Value& s, const CallArgs&, Budget&) { return Value(to_upper(s.as_string())); }},
      {"lower",
       [](const Value& s, const CallArgs&, Budget&) { return Value(to_lower(s.as_string())); }},
      {"title",
       [](const Value& s, const CallArgs&, Budget&) { return Value(python_title(s.as_string())); }},
      {"capitalize",
       [](const Value& s, const CallArgs&, Budget&) { return Value(capitalize(s.as_string())); }},
      {"replace", [](const Value& s, const CallArgs& a,
                     Budget& b) { return apply_filter("replace", s, a, b); }},
      {"format", format},
      {"join",
       [](const Value& s, const CallArgs& a, Budget& b) {
         CallArgs join_args;
         join_args.positional.push_back(s);
         return apply_filter("join", required_arg(a, 0, "iterable", "join()"), join_args, b);
       }},
      {"find", [](const Value& s, const CallArgs& a, Budget&) { return find(s, a, false); }},
      {"rfind", [](const Value& s, const CallArgs& a, Budget&) { return find(s, a, true); }},
      {"count",
       [](const Value& s, const CallArgs& a, Budget&) {
         const Value& needle = required_arg(a, 0, "sub", "count()");
         if (!needle.is_string()) throw TemplateError("count() argument must be str");
         const std::string& text = s.as_string();
         const std::string& sub = needle.as_string();
         if (sub.empty()) return Value(utf8_length(text) + 1);
         int64_t n = 0;
         for (size_t pos = 0; (pos = text.find(sub, pos)) != std::string::npos; pos += sub.size())
           ++n;
         return Value(n);
       }},
      {"splitlines",
       [](const Value& s, const CallArgs&, Budget&) {
         ValueList lines;
         for (std::string& line : split_lines(s.as_string())) lines.emplace_back(std::move(line));
         return Value(std::move(lines));
       }},
      {"isdigit",
       [](const Value& s, const CallArgs&, Budget&) { return all_chars(s, ascii_digit); }},
      {"isalpha",
       [](const Value& s, const CallArgs&, Budget&) { return all_chars(s, ascii_alpha); }},
      {"isalnum",
       [](const Value& s, const CallArgs&, Budget&) {
         return all_chars(s, [](char32_t c) { return ascii_digit(c) || ascii_alpha(c); });
       }},
      {"isspace",
       [](const Value& s, const CallArgs&, Budget&) { return all_chars(s, is_python_space); }},
      {"islower",
       [](const Value& s, const CallArgs&, Budget&) {
         const std::string& t = s.as_string();
         return Value(to_lower(t) == t && to_upper(t) != t);
       }},
      {"isupper",
       [](const Value& s, const CallArgs&, Budget&) {
         const std::string& t = s.as_string();
         return Value(to_upper(t) == t && to_lower(t) != t);
       }},
  };
  return kMethods;
}

const std::map<std::string, Method>& dict_methods() {
  static const std::map<std::string, Method> kMethods = {
      {"get",
       [](const Value& d, const CallArgs& a, Budget&) {
         const Value& key = required_arg(a, 0, "key", "get()");
         const Value* found = key.is_string() ? d.as_dict().find(key.as_string()) : nullptr;
         if (found != nullptr) return *found;
         const Value* fallback = a.get(1, "default");
         return fallback ? *fallback : Value::none();
       }},
      {"items",
       [](const Value& d, const CallArgs&, Budget& b) { return apply_filter("items", d, {}, b); }},
      {"keys", [](const Value& d, const CallArgs&, Budget&) { return Value(iterate(d)); }},
      {"values",
       [](const Value& d, const CallArgs&, Budget&) {
         ValueList values;
         for (const auto& [k, v] : d.as_dict().entries()) values.push_back(v);
         return Value(std::move(values));
       }},
  };
  return kMethods;
}

}  // namespace

Value find_method(const Value& object, const std::string& name, Budget& budget) {
  const std::map<std::string, Method>* table = nullptr;
  if (object.is_string()) table = &string_methods();
  if (object.is_dict()) table = &dict_methods();
  if (table == nullptr) return Value::undefined("");
  const auto it = table->find(name);
  if (it == table->end()) return Value::undefined("");
  const Method method = it->second;
  Budget* spent = &budget;
  return Value::function(
      name, [object, method, spent](const CallArgs& args) { return method(object, args, *spent); });
}

}  // namespace dq4::jinja
