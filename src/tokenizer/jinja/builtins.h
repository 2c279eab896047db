#pragma once
// Jinja2's built-in filters, tests, globals and the Python methods templates call on strings,
// lists and dicts, with the limits that keep a hostile template from running away.

#include <cstdint>
#include <functional>
#include <string>

#include "value.h"

namespace dq4::jinja {

// Work and size limits of one render: loops and list building spend steps, and no string (the
// output included) may outgrow kMaxStringBytes.
class Budget {
 public:
  static constexpr uint64_t kMaxSteps = 1'000'000;
  static constexpr size_t kMaxStringBytes = size_t{32} << 20;

  void spend(uint64_t steps);
  void check_size(size_t bytes) const;

 private:
  uint64_t steps_ = 0;
};

bool is_filter(const std::string& name);
bool is_test(const std::string& name);

Value apply_filter(const std::string& name, const Value& operand, const CallArgs& args,
                   Budget& budget);
bool apply_test(const std::string& name, const Value& operand, const CallArgs& args);

// obj.name for a Python method of a str, list or dict, bound to obj; undefined if there is none.
Value find_method(const Value& object, const std::string& name, Budget& budget);

// range, namespace, dict, raise_exception, strftime_now. Every namespace made is passed to
// `on_namespace` (the interpreter empties them after rendering, which breaks reference cycles).
void add_globals(ValueDict& globals, Budget& budget,
                 const std::function<void(const Value&)>& on_namespace);

// raise_exception(message): the template's own error, reported with its message as written.
class RaisedError : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

// The argument at `index` or named `name`; TemplateError naming `what` when it is missing.
const Value& required_arg(const CallArgs& args, size_t index, const char* name, const char* what);

}  // namespace dq4::jinja
