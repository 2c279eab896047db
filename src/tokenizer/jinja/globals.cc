// The globals transformers gives chat templates (Jinja2's range, namespace and dict, plus
// raise_exception and strftime_now), the render budget, and the argument helpers.

#include <algorithm>
#include <cmath>
#include <ctime>

#include "builtins.h"

namespace dq4::jinja {

void Budget::spend(uint64_t steps) {
  steps_ += steps;
  if (steps_ > kMaxSteps)
    throw TemplateError("template takes more than " + std::to_string(kMaxSteps) +
                        " steps to render (runaway loop?)");
}

void Budget::check_size(size_t bytes) const {
  if (bytes > kMaxStringBytes)
    throw TemplateError("template builds a string longer than " + std::to_string(kMaxStringBytes) +
                        " bytes");
}

const Value& required_arg(const CallArgs& args, size_t index, const char* name, const char* what) {
  const Value* v = args.get(index, name);
  if (v == nullptr)
    throw TemplateError(std::string(what) + " missing required argument '" + name + "'");
  return *v;
}

namespace {

int64_t int_arg(const Value& v) {
  if (!v.is_number() || v.is_float())
    throw TemplateError("range() arguments must be integers, not " + type_name(v));
  return v.as_int();
}

Value range(const CallArgs& args, Budget& budget) {
  if (args.positional.empty() || args.positional.size() > 3 || !args.keyword.empty())
    throw TemplateError("range() takes 1 to 3 positional arguments");
  int64_t start = 0, stop = 0, step = 1;
  if (args.positional.size() == 1) {
    stop = int_arg(args.positional[0]);
  } else {
    start = int_arg(args.positional[0]);
    stop = int_arg(args.positional[1]);
    if (args.positional.size() == 3) step = int_arg(args.positional[2]);
  }
  if (step == 0) throw TemplateError("range() arg 3 must not be zero");
  // Count first (in double, free of overflow) so a huge range fails before it is built.
  const double span = (static_cast<double>(stop) - static_cast<double>(start)) / step;
  const double count = span <= 0 ? 0 : std::ceil(span);
  budget.spend(static_cast<uint64_t>(std::min(count, 1e18)));
  ValueList items;
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) items.emplace_back(start + i * step);
  return Value(std::move(items));
}

Value strftime_now(const CallArgs& args) {
  const Value& format = required_arg(args, 0, "format", "strftime_now()");
  if (!format.is_string()) throw TemplateError("strftime_now() format must be a string");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[512];
  const size_t n = std::strftime(buffer, sizeof buffer, format.as_string().c_str(), &local);
  if (n == 0 && !format.as_string().empty())
    throw TemplateError("strftime_now(): format '" + format.as_string() + "' gives no text");
  return Value(std::string(buffer, n));
}

}  // namespace

void add_globals(ValueDict& globals, Budget& budget,
                 const std::function<void(const Value&)>& on_namespace) {
  Budget* spent = &budget;
  globals.set("range", Value::function(
                           "range", [spent](const CallArgs& args) { return range(args, *spent); }));
  globals.set("namespace", Value::function("namespace", [on_namespace](const CallArgs& args) {
                ValueDict attributes;
                if (args.positional.size() > 1)
                  throw TemplateError("namespace() takes at most one positional argument");
                if (!args.positional.empty()) {
                  if (!args.positional[0].is_dict())
                    throw TemplateError("namespace() positional argument must be a dict");
                  for (const auto& [k, v] : args.positional[0].as_dict().entries())
                    attributes.set(k, v);
                }
                for (const auto& [k, v] : args.keyword) attributes.set(k, v);
                Value ns = Value::make_namespace(std::move(attributes));
                on_namespace(ns);
                return ns;
              }));
  globals.set("dict", Value::function("dict", [](const CallArgs& args) {
                if (!args.positional.empty())
                  throw TemplateError("dict() takes keyword arguments only here");
                ValueDict dict;
                for (const auto& [k, v] : args.keyword) dict.set(k, v);
                return Value(std::move(dict));
              }));
  globals.set("raise_exception", Value::function("raise_exception", [](const CallArgs& args) {
                const Value* message = args.get(0, "message");
                throw RaisedError(message ? to_str(*message) : "raise_exception() was called");
                return Value::none();
              }));
  globals.set("strftime_now", Value::function("strftime_now", strftime_now));
}

}  // namespace dq4::jinja
