#include "args.h"

#include <cstdio>
#include <cstdlib>

#include "dq4/error.h"

namespace dq4::cli {

Args& Args::option(const std::string& name, const std::string& value_name, const std::string& help,
                   const std::string& default_value) {
  order_.push_back(name);
  options_[name] = {value_name, help, default_value};
  if (!value_name.empty() && !default_value.empty()) values_[name] = default_value;
  return *this;
}

bool Args::parse(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (arg.rfind("--", 0) != 0)
      throw Error("unexpected argument '" + arg + "' (see dq4 " + command_ + " --help)");
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
      values_[name] = "1";
    } else if (has_inline) {
      values_[name] = inline_value;
    } else {
      if (i + 1 >= argc)
        throw Error("option --" + name + " needs a value (" + it->second.value_name + ")");
      values_[name] = argv[++i];
    }
  }
  return true;
}

bool Args::flag(const std::string& name) const { return values_.count(name) != 0; }

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

std::string Args::help() const {
  std::string out = "usage: dq4 " + command_ + " [options]\n\n" + summary_ + "\n\noptions:\n";
  for (const std::string& name : order_) {
    const Option& o = options_.at(name);
    std::string left = "  --" + name + (o.value_name.empty() ? "" : " " + o.value_name);
    if (left.size() < 28) left.resize(28, ' ');
    out += left + " " + o.help;
    if (!o.default_value.empty()) out += " (default: " + o.default_value + ")";
    out += "\n";
  }
  std::string left = "  --help";
  left.resize(28, ' ');
  out += left + " show this help\n";
  return out;
}

}  // namespace dq4::cli
