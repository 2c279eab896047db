#include "args.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "dq4/kernels/error.h"

namespace dq4::cli {

Args& Args::option(const std::string& name, const std::string& value_name, const std::string& help,
                   const std::string& default_value) {
  order_.push_back(name);
  options_[name] = {value_name, help, default_value};
  if (!value_name.empty() && !default_value.empty()) values_[name] = default_value;
  return *this;
}

Args& Args::short_name(char c, const std::string& name) {
  options_.at(name).short_name = c;
  return *this;
}

Args& Args::positional(const std::string& name, const std::string& help, bool required) {
  positionals_.push_back({name, help, required});
  return *this;
}

Args& Args::repeatable(const std::string& name) {
  options_.at(name).repeatable = true;
  return *this;
}

void Args::set(const std::string& name, const std::string& value) {
  if (options_.at(name).repeatable) repeated_[name].push_back(value);
  values_[name] = value;
  given_.insert(name);
}

std::vector<std::string> Args::values(const std::string& name) const {
  const auto it = repeated_.find(name);
  if (it != repeated_.end()) return it->second;
  const std::string& fallback = options_.at(name).default_value;
  return fallback.empty() ? std::vector<std::string>{} : std::vector<std::string>{fallback};
}

bool Args::parse(int argc, char** argv, int first) {
  size_t positional_index = 0;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (arg.size() == 2 && arg[0] == '-' && arg[1] != '-') {
      const auto it = std::find_if(options_.begin(), options_.end(),
                                   [&](const auto& o) { return o.second.short_name == arg[1]; });
      if (it == options_.end())
        throw Error("unknown option " + arg + " (see dq4 " + command_ + " --help)");
      arg = "--" + it->first;
    }
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      if (positional_index >= positionals_.size())
        throw Error("unexpected argument '" + arg + "' (see dq4 " + command_ + " --help)");
      values_[positionals_[positional_index++].name] = arg;
      continue;
    }
    std::string name = arg.substr(2), inline_value;
    const bool has_inline = name.find('=') != std::string::npos;
    if (has_inline) {
      inline_value = name.substr(name.find('=') + 1);
      name = name.substr(0, name.find('='));
    }
    const auto it = options_.find(name);
    if (it == options_.end())
      throw Error("unknown option --" + name + " (see dq4 " + command_ + " --help)");
    if (it->second.value_name.empty()) {
      if (has_inline) throw Error("option --" + name + " takes no value");
      set(name, "1");
    } else if (has_inline) {
      set(name, inline_value);
    } else {
      if (i + 1 >= argc)
        throw Error("option --" + name + " needs a value (" + it->second.value_name + ")");
      set(name, argv[++i]);
    }
  }
  for (size_t p = positional_index; p < positionals_.size(); ++p)
    if (positionals_[p].required)
      throw Error("missing argument " + positionals_[p].name + " (see dq4 " + command_ +
                  " --help)");
  return true;
}

bool Args::flag(const std::string& name) const { return values_.count(name) != 0; }

bool Args::given(const std::string& name) const { return given_.count(name) != 0; }

std::string Args::value(const std::string& name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? "" : it->second;
}

int64_t Args::integer(const std::string& name) const {
  const std::string text = value(name);
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0')
    throw Error("option --" + name + " needs an integer, got '" + text + "'");
  return v;
}

double Args::number(const std::string& name) const {
  const std::string text = value(name);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0')
    throw Error("option --" + name + " needs a number, got '" + text + "'");
  return v;
}

std::vector<int64_t> Args::integers(const std::string& name) const {
  return parse_integer_list(name, value(name));
}

uint64_t Args::byte_size(const std::string& name) const {
  return parse_byte_size(name, value(name));
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  for (size_t comma = text.find(','); comma != std::string::npos; comma = text.find(',', start)) {
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  items.push_back(text.substr(start));
  return items;
}

std::vector<int64_t> parse_integer_list(const std::string& option, const std::string& text) {
  std::vector<int64_t> out;
  for (const std::string& item : split_commas(text)) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0')
      throw Error("option --" + option + " needs comma-separated integers, got '" + text + "'");
    out.push_back(v);
  }
  return out;
}

uint64_t parse_byte_size(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  std::string unit(end);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const struct {
    const char* name;
    double factor;
  } kUnits[] = {{"", 1},
                {"B", 1},
                {"KB", 1e3},
                {"MB", 1e6},
                {"GB", 1e9},
                {"TB", 1e12},
                {"KIB", 1024.0},
                {"MIB", 1048576.0},
                {"GIB", 1073741824.0},
                {"TIB", 1099511627776.0}};
  for (const auto& u : kUnits) {
    if (unit != u.name) continue;
    const double bytes = std::floor(number * u.factor);
    if (end == text.c_str() || !(bytes >= 1) || bytes > 1.8e19) break;
    return static_cast<uint64_t>(bytes);
  }
  throw Error("option --" + option + " needs a size such as 5GB, 500MB or 2GiB, got '" + text +
              "'");
}

std::string Args::help() const {
  std::string usage = "usage: dq4 " + command_;
  for (const Positional& p : positionals_) usage += p.required ? " " + p.name : " [" + p.name + "]";
  std::string out = usage + " [options]\n\n" + summary_ + "\n\n";
  if (!positionals_.empty()) out += "arguments:\n";
  for (const Positional& p : positionals_) {
    std::string left = "  " + p.name;
    if (left.size() < 28) left.resize(28, ' ');
    out += left + " " + p.help + "\n";
  }
  out += "options:\n";
  for (const std::string& name : order_) {
    const Option& o = options_.at(name);
    std::string left =
        std::string(o.short_name != 0 ? "  -" + std::string(1, o.short_name) + ", " : "  ") + "--" +
        name + (o.value_name.empty() ? "" : " " + o.value_name);
    if (left.size() < 28) left.resize(28, ' ');
    out += left + " " + o.help;
    if (o.repeatable) out += " (repeatable)";
    if (!o.default_value.empty()) out += " (default: " + o.default_value + ")";
    out += "\n";
  }
  std::string left = "  --help";
  left.resize(28, ' ');
  out += left + " show this help\n";
  return out;
}

}  // namespace dq4::cli
