#pragma once
// A small command-line option parser shared by the dq4 subcommands: declared options produce the
// --help text, and unknown options or missing/ill-formed values are errors naming the option.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace dq4::cli {

// "a,b,c" -> {"a", "b", "c"}; an empty text gives one empty item.
std::vector<std::string> split_commas(const std::string& text);
// Comma-separated integers; `option` names the option in the error for anything else.
std::vector<int64_t> parse_integer_list(const std::string& option, const std::string& text);
// "5GB" (10^9), "500MB", "2GiB" (2^30), "1.5GB", "4096" (bytes). Throws dq4::Error naming
// the option (`option`: its name without the dashes) for anything else or for 0.
uint64_t parse_byte_size(const std::string& option, const std::string& text);

class Args {
 public:
  Args(std::string command, std::string summary)
      : command_(std::move(command)), summary_(std::move(summary)) {}

  // Declares --name (a flag when value_name is empty, else an option taking a value).
  Args& option(const std::string& name, const std::string& value_name, const std::string& help,
               const std::string& default_value = "");
  // Makes -c a short spelling of the declared option --name.
  Args& short_name(char c, const std::string& name);
  // Declares the next positional argument (read with value(name)); required ones must be given.
  Args& positional(const std::string& name, const std::string& help, bool required = true);
  // Lets an option be given several times; values() returns them all, in order.
  Args& repeatable(const std::string& name);

  // Parses argv[first..argc). Returns false when --help was given (help is printed). Throws
  // dq4::Error on a bad command line.
  bool parse(int argc, char** argv, int first);

  bool flag(const std::string& name) const;
  // Whether the command line gave the option (even as an empty value).
  bool given(const std::string& name) const;
  std::string value(const std::string& name) const;
  int64_t integer(const std::string& name) const;
  double number(const std::string& name) const;
  // A comma-separated list of integers, e.g. "1,2,4".
  std::vector<int64_t> integers(const std::string& name) const;
  // A size in bytes (see parse_byte_size).
  uint64_t byte_size(const std::string& name) const;
  // Every value a repeatable option was given (its default when it was not given).
  std::vector<std::string> values(const std::string& name) const;

  std::string help() const;

 private:
  struct Option {
    std::string value_name, help, default_value;
    char short_name = 0;
    bool repeatable = false;
  };
  struct Positional {
    std::string name, help;
    bool required = true;
  };
  void set(const std::string& name, const std::string& value);
  std::string command_, summary_;
  std::vector<std::string> order_;
  std::map<std::string, Option> options_;
  std::vector<Positional> positionals_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> repeated_;  // repeatable options given
  std::set<std::string> given_;                               // options the command line gave
};

}  // namespace dq4::cli
