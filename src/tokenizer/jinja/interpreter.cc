#include "interpreter.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "dq4/kernels/error.h"
#include "text.h"

namespace dq4::jinja {
namespace {

// A TemplateError that already knows where in the template it happened.
class LocatedError : public TemplateError {
 public:
  LocatedError(const std::string& message, Location at, bool raised)
      : TemplateError(message), location(at), raised(raised) {}
  Location location;
  bool raised;
};

// Bounds the interpreter's recursion: nested expressions, blocks and macro calls.
constexpr int kMaxEvalDepth = 300;

[[noreturn]] void fail_undefined(const Value& v) {
  throw TemplateError(v.undefined_hint().empty() ? "value is undefined" : v.undefined_hint());
}

std::string checked_concat(const std::string& a, const std::string& b) {
  if (a.size() + b.size() > Budget::kMaxStringBytes)
    throw TemplateError("template builds a string longer than " +
                        std::to_string(Budget::kMaxStringBytes) + " bytes");
  return a + b;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) throw TemplateError("integer division or modulo by zero");
  if (b == -1) {
    if (a == INT64_MIN) throw TemplateError("integer overflow");
    return -a;
  }
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t python_mod(int64_t a, int64_t b) {
  if (b == 0) throw TemplateError("integer division or modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

Value int_power(int64_t base, int64_t exponent) {
  if (exponent < 0)
    return Value(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  int64_t result = 1;
  for (int64_t i = 0; i < exponent; ++i) {
    if (__builtin_mul_overflow(result, base, &result)) throw TemplateError("integer overflow");
    if (result == 0 || result == 1) break;
    if (result == -1) return Value((exponent - i - 1) % 2 == 0 ? int64_t{-1} : int64_t{1});
  }
  return Value(result);
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (a.is_float() || b.is_float()) {
    const double x = a.as_double(), y = b.as_double();
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "**") {
      if (x == 0.0 && y < 0) throw TemplateError("0.0 cannot be raised to a negative power");
      return Value(std::pow(x, y));
    }
    if (y == 0.0) throw TemplateError("float division by zero");
    if (op == "/") return Value(x / y);
    if (op == "//") return Value(std::floor(x / y));
    double r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return Value(r);
  }
  const int64_t x = a.as_int(), y = b.as_int();
  int64_t r = 0;
  if (op == "+" && !__builtin_add_overflow(x, y, &r)) return Value(r);
  if (op == "-" && !__builtin_sub_overflow(x, y, &r)) return Value(r);
  if (op == "*" && !__builtin_mul_overflow(x, y, &r)) return Value(r);
  if (op == "/") {
    if (y == 0) throw TemplateError("division by zero");
    return Value(static_cast<double>(x) / static_cast<double>(y));
  }
  if (op == "//") return Value(floor_div(x, y));
  if (op == "%") return Value(python_mod(x, y));
  if (op == "**") return int_power(x, y);
  throw TemplateError("integer overflow");
}

int64_t utf8_length_of(const Value& s) { return utf8_length(s.as_string()); }

std::string code_point_at(const std::string& s, int64_t index) {
  std::string out;
  append_utf8(out, decode_utf8(s)[index]);
  return out;
}

// Python's `"text %s" % value` for the conversions templates use: %s %r %d %i %%.
std::string printf_format(const std::string& pattern, const Value& values) {
  const ValueList args = values.is_tuple() ? values.as_list() : ValueList{values};
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      out += pattern[i];
      continue;
    }
    if (++i == pattern.size()) throw TemplateError("incomplete format");
    const char conversion = pattern[i];
    if (conversion == '%') {
      out += '%';
      continue;
    }
    if (next >= args.size()) throw TemplateError("not enough arguments for format string");
    const Value& arg = args[next++];
    if (conversion == 's') {
      out += to_str(arg);
    } else if (conversion == 'r') {
      out += repr(arg);
    } else if (conversion == 'd' || conversion == 'i') {
      if (!arg.is_number()) throw TemplateError("%d format: a real number is required");
      const std::optional<int64_t> whole =
          arg.is_float() ? truncate_to_int(arg.as_double()) : arg.as_int();
      if (!whole) throw TemplateError("%d format: " + repr(arg) + " has no 64-bit integer value");
      out += std::to_string(*whole);
    } else {
      throw TemplateError(std::string("unsupported format character '") + conversion + "'");
    }
  }
  if (next < args.size())
    throw TemplateError("not all arguments converted during string formatting");
  return out;
}

class Interpreter {
 public:
  explicit Interpreter(const ValueDict& context) {
    frames_.emplace_back();
    add_globals(frames_[0], budget_, [this](const Value& ns) { namespaces_.push_back(ns); });
    for (const auto& [k, v] : context.entries()) frames_[0].set(k, v);
  }

  // Empties every namespace made while rendering: a namespace holding itself would otherwise
  // keep itself alive.
  ~Interpreter() {
    for (const Value& ns : namespaces_) ns.as_namespace() = ValueDict();
  }

  std::string render(const Body& body) {
    std::string out;
    try {
      exec(body, out);
    } catch (const LocatedError& e) {
      if (e.raised)
        throw Error("chat template raised an error (" + describe(e.location) + "): " + e.what());
      throw Error("chat template " + describe(e.location) + ": " + e.what());
    }
    return out;
  }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  struct Deeper {
    int& depth;
    explicit Deeper(int& d) : depth(d) {
      if (++depth > kMaxEvalDepth)
        throw TemplateError("template recursion deeper than " + std::to_string(kMaxEvalDepth) +
                            " levels");
    }
    ~Deeper() { --depth; }
  };

  // ---- scopes ------------------------------------------------------------------------------
  Value lookup(const std::string& name) const {
    for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame)
      if (const Value* v = frame->find(name)) return *v;
    return Value::undefined("'" + name + "' is undefined");
  }
  void assign(const std::string& name, Value v) { frames_.back().set(name, std::move(v)); }

  void assign_targets(const std::vector<std::string>& targets, const Value& v) {
    if (targets.size() == 1) {
      assign(targets[0], v);
      return;
    }
    const ValueList items = iterate(v);
    if (items.size() != targets.size())
      throw TemplateError("cannot unpack " + std::to_string(items.size()) + " values into " +
                          std::to_string(targets.size()) + " names");
    for (size_t i = 0; i < targets.size(); ++i) assign(targets[i], items[i]);
  }

  void append(std::string& out, const std::string& text) {
    budget_.check_size(out.size() + text.size());
    out += text;
  }

  // ---- statements --------------------------------------------------------------------------
  void exec(const Body& body, std::string& out) {
    for (const StmtPtr& stmt : body) {
      exec(*stmt, out);
      if (flow_ != Flow::kNormal) return;
    }
  }

  void exec(const Stmt& s, std::string& out) {
    try {
      const Deeper deeper(depth_);
      budget_.spend(1);
      exec_statement(s, out);
    } catch (const LocatedError&) {
      throw;
    } catch (const RaisedError& e) {
      throw LocatedError(e.what(), s.location, true);
    } catch (const TemplateError& e) {
      throw LocatedError(e.what(), s.location, false);
    }
  }

  void exec_statement(const Stmt& s, std::string& out) {
    switch (s.kind) {
      case Stmt::Kind::kText:
        append(out, s.text);
        return;
      case Stmt::Kind::kOutput:
        append(out, to_str(eval(*s.expr)));
        return;
      case Stmt::Kind::kIf:
        for (size_t i = 0; i < s.conditions.size(); ++i) {
          if (truthy(eval(*s.conditions[i]))) {
            exec(s.bodies[i], out);
            return;
          }
        }
        exec(s.else_body, out);
        return;
      case Stmt::Kind::kFor:
        exec_for(s, out);
        return;
      case Stmt::Kind::kSet:
        if (!s.attribute.empty()) {
          const Value ns = lookup(s.targets[0]);
          if (!ns.is_namespace())
            throw TemplateError("cannot assign attribute on non-namespace object '" + s.targets[0] +
                                "'");
          ns.as_namespace().set(s.attribute, eval(*s.expr));
        } else {
          assign_targets(s.targets, eval(*s.expr));
        }
        return;
      case Stmt::Kind::kSetBlock: {
        std::string captured;
        exec(s.body, captured);
        assign(s.targets[0], s.filter ? apply_filters(*s.filter, Value(std::move(captured)))
                                      : Value(std::move(captured)));
        return;
      }
      case Stmt::Kind::kMacro:
        define_macro(s);
        return;
      case Stmt::Kind::kFilter: {
        std::string captured;
        exec(s.body, captured);
        append(out, to_str(apply_filters(*s.filter, Value(std::move(captured)))));
        return;
      }
      case Stmt::Kind::kBreak:
        flow_ = Flow::kBreak;
        return;
      case Stmt::Kind::kContinue:
        flow_ = Flow::kContinue;
        return;
      case Stmt::Kind::kBlock:
        exec(s.body, out);
        return;
    }
  }

  void exec_for(const Stmt& s, std::string& out) {
    ValueList items = iterate(eval(*s.expr));
    if (s.filter) {  // `for x in xs if cond`: the loop object counts only the kept items
      ValueList kept;
      for (Value& item : items) {
        budget_.spend(1);
        frames_.emplace_back();
        assign_targets(s.targets, item);
        const bool keep = truthy(eval(*s.filter));
        frames_.pop_back();
        if (keep) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      exec(s.else_body, out);
      return;
    }
    const auto n = static_cast<int64_t>(items.size());
    // One cycle() per loop reading the current index, as Jinja2's one mutable loop object does.
    const auto index = std::make_shared<int64_t>(0);
    const Value cycle = Value::function("loop.cycle", [index](const CallArgs& args) {
      if (args.positional.empty()) throw TemplateError("no items for cycling given");
      return args.positional[*index % args.positional.size()];
    });
    for (int64_t i = 0; i < n; ++i) {
      budget_.spend(1);
      *index = i;
      ValueDict loop({
          {"index", Value(i + 1)},
          {"index0", Value(i)},
          {"revindex", Value(n - i)},
          {"revindex0", Value(n - i - 1)},
          {"first", Value(i == 0)},
          {"last", Value(i == n - 1)},
          {"length", Value(n)},
          {"depth", Value(1)},
          {"depth0", Value(0)},
          {"previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item")},
          {"nextitem", i + 1 < n ? items[i + 1] : Value::undefined("there is no next item")},
          {"cycle", cycle},
      });
      frames_.emplace_back();
      frames_.back().set("loop", Value(std::move(loop)));
      assign_targets(s.targets, items[i]);
      exec(s.body, out);
      frames_.pop_back();
      const Flow flow = flow_;
      flow_ = Flow::kNormal;
      if (flow == Flow::kBreak) break;
    }
  }

  void define_macro(const Stmt& s) {
    const Stmt* macro = &s;
    assign(s.text, Value::function(s.text, [this, macro](const CallArgs& args) {
             return call_macro(*macro, args);
           }));
  }

  // A macro sees the template's top-level names and its own parameters, not the caller's loop
  // variables.
  Value call_macro(const Stmt& macro, const CallArgs& args) {
    const Deeper deeper(depth_);
    std::vector<ValueDict> caller_frames(std::make_move_iterator(frames_.begin() + 1),
                                         std::make_move_iterator(frames_.end()));
    frames_.resize(1);
    frames_.emplace_back();
    std::string out;
    try {
      ValueList varargs;
      ValueDict kwargs;
      for (size_t i = args.positional.size(); i-- > macro.params.size();)
        varargs.insert(varargs.begin(), args.positional[i]);
      for (const auto& [name, value] : args.keyword) {
        bool is_param = false;
        for (const auto& param : macro.params) is_param |= param.first == name;
        if (!is_param) kwargs.set(name, value);
      }
      assign("varargs", Value(std::move(varargs), true));
      assign("kwargs", Value(std::move(kwargs)));
      for (size_t i = 0; i < macro.params.size(); ++i) {
        const auto& [name, default_value] = macro.params[i];
        const Value* given = args.get(i, name);
        if (given != nullptr) {
          assign(name, *given);
        } else if (default_value) {
          assign(name, eval(*default_value));
        } else {
          assign(name, Value::undefined("parameter '" + name + "' was not provided"));
        }
      }
      exec(macro.body, out);
    } catch (...) {
      frames_.resize(1);
      for (ValueDict& frame : caller_frames) frames_.push_back(std::move(frame));
      flow_ = Flow::kNormal;
      throw;
    }
    frames_.resize(1);
    for (ValueDict& frame : caller_frames) frames_.push_back(std::move(frame));
    flow_ = Flow::kNormal;
    return Value(std::move(out));
  }

  // ---- expressions -------------------------------------------------------------------------
  Value eval(const Expr& e) {
    try {
      const Deeper deeper(depth_);
      return eval_expression(e);
    } catch (const LocatedError&) {
      throw;
    } catch (const RaisedError& err) {
      throw LocatedError(err.what(), e.location, true);
    } catch (const TemplateError& err) {
      throw LocatedError(err.what(), e.location, false);
    }
  }

  CallArgs eval_args(const Expr& e) {
    CallArgs args;
    for (const ExprPtr& item : e.items) args.positional.push_back(eval(*item));
    for (const auto& [name, value] : e.keywords) args.keyword.emplace_back(name, eval(*value));
    return args;
  }

  // A filter chain whose innermost operand is the text of a block.
  Value apply_filters(const Expr& filter, Value input) {
    if (filter.a) input = apply_filters(*filter.a, std::move(input));
    return apply_filter(filter.name, input, eval_args(filter), budget_);
  }

  Value eval_expression(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.value;
      case Expr::Kind::kName:
        return lookup(e.name);
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        ValueList items;
        for (const ExprPtr& item : e.items) items.push_back(eval(*item));
        return Value(std::move(items), e.kind == Expr::Kind::kTuple);
      }
      case Expr::Kind::kDict: {
        ValueDict dict;
        for (size_t i = 0; i < e.keys.size(); ++i) {
          const Value key = eval(*e.keys[i]);
          if (!key.is_string())
            throw TemplateError("dict keys must be strings here, not " + type_name(key));
          dict.set(key.as_string(), eval(*e.items[i]));
        }
        return Value(std::move(dict));
      }
      case Expr::Kind::kAttribute:
        return attribute(eval(*e.a), e.name);
      case Expr::Kind::kSubscript:
        return subscript(eval(*e.a), eval(*e.b));
      case Expr::Kind::kSlice:
        return slice(e);
      case Expr::Kind::kCall: {
        const Value callee = eval(*e.a);
        if (callee.is_undefined()) fail_undefined(callee);
        if (!callee.is_function())
          throw TemplateError("'" + type_name(callee) + "' object is not callable");
        return callee.call(eval_args(e));
      }
      case Expr::Kind::kFilter: {
        const Value operand = e.a ? eval(*e.a) : Value();
        return apply_filter(e.name, operand, eval_args(e), budget_);
      }
      case Expr::Kind::kTest:
        return Value(apply_test(e.name, eval(*e.a), eval_args(e)) != e.negated);
      case Expr::Kind::kNegate:
      case Expr::Kind::kPlus: {
        const Value v = eval(*e.a);
        if (v.is_undefined()) fail_undefined(v);
        if (!v.is_number())
          throw TemplateError("bad operand type for unary " +
                              std::string(e.kind == Expr::Kind::kNegate ? "-" : "+") + ": '" +
                              type_name(v) + "'");
        if (e.kind == Expr::Kind::kPlus) return v.is_bool() ? Value(v.as_int()) : v;
        if (v.is_float()) return Value(-v.as_double());
        if (v.as_int() == INT64_MIN) throw TemplateError("integer overflow");
        return Value(-v.as_int());
      }
      case Expr::Kind::kNot:
        return Value(!truthy(eval(*e.a)));
      case Expr::Kind::kAnd: {
        Value left = eval(*e.a);
        return truthy(left) ? eval(*e.b) : left;
      }
      case Expr::Kind::kOr: {
        Value left = eval(*e.a);
        return truthy(left) ? left : eval(*e.b);
      }
      case Expr::Kind::kBinary:
        return binary(e.name, eval(*e.a), eval(*e.b));
      case Expr::Kind::kCompare: {
        Value left = eval(*e.a);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.items[i]);
          if (!compare_op(e.ops[i], left, right)) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case Expr::Kind::kCondition:
        if (truthy(eval(*e.b))) return eval(*e.a);
        return e.c ? eval(*e.c) : Value::undefined("the condition was false and there is no else");
    }
    throw TemplateError("unknown expression");
  }

  Value attribute(const Value& object, const std::string& name) {
    if (object.is_undefined()) fail_undefined(object);
    if (object.is_namespace()) {
      const Value* v = object.as_namespace().find(name);
      return v ? *v : Value::undefined("'Namespace' object has no attribute '" + name + "'");
    }
    // Jinja2 tries Python attributes (methods) first for `.`, then items.
    Value method = find_method(object, name, budget_);
    if (!method.is_undefined()) return method;
    if (object.is_dict())
      if (const Value* v = object.as_dict().find(name)) return *v;
    return Value::undefined("'" + type_name(object) + " object' has no attribute '" + name + "'");
  }

  Value subscript(const Value& object, const Value& key) {
    if (object.is_undefined()) fail_undefined(object);
    // Jinja2 tries items first for `[]`, then attributes.
    if ((object.is_dict() || object.is_namespace()) && key.is_string()) {
      const ValueDict& dict = object.is_dict() ? object.as_dict() : object.as_namespace();
      if (const Value* v = dict.find(key.as_string())) return *v;
    }
    if ((object.is_list() || object.is_string()) && key.is_number() && !key.is_float()) {
      const int64_t n =
          object.is_list() ? static_cast<int64_t>(object.as_list().size()) : utf8_length_of(object);
      int64_t index = key.as_int();
      if (index < 0) index += n;
      if (index >= 0 && index < n) {
        if (object.is_list()) return object.as_list()[index];
        return Value(code_point_at(object.as_string(), index));
      }
      return Value::undefined(type_name(object) + " index " + std::to_string(key.as_int()) +
                              " out of range");
    }
    if (key.is_string()) return attribute(object, key.as_string());
    return Value::undefined("'" + type_name(object) + " object' has no item " + repr(key));
  }

  Value slice(const Expr& e) {
    const Value object = eval(*e.a);
    if (object.is_undefined()) fail_undefined(object);
    auto bound = [&](const ExprPtr& expr) -> std::optional<int64_t> {
      if (!expr) return std::nullopt;
      const Value v = eval(*expr);
      if (v.is_none()) return std::nullopt;
      if (!v.is_number() || v.is_float())
        throw TemplateError("slice indices must be integers or None, not " + type_name(v));
      return v.as_int();
    };
    const std::optional<int64_t> start = bound(e.b), stop = bound(e.c), step_arg = bound(e.d);
    const int64_t step = step_arg.value_or(1);
    if (step == 0) throw TemplateError("slice step cannot be zero");
    ValueList items;
    std::vector<char32_t> code_points;
    int64_t n = 0;
    if (object.is_list()) {
      n = static_cast<int64_t>(object.as_list().size());
    } else if (object.is_string()) {
      code_points = decode_utf8(object.as_string());
      n = static_cast<int64_t>(code_points.size());
    } else {
      throw TemplateError("'" + type_name(object) + "' object is not subscriptable");
    }
    // Python's slice.indices().
    auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
      if (!v) return fallback;
      int64_t x = *v;
      if (x < 0) x = std::max<int64_t>(x + n, step < 0 ? -1 : 0);
      if (x >= n) x = step < 0 ? n - 1 : n;
      return x;
    };
    const int64_t first = clamp(start, step < 0 ? n - 1 : 0);
    const int64_t last = clamp(stop, step < 0 ? -1 : n);
    std::vector<int64_t> picks;
    for (int64_t i = first; step > 0 ? i < last : i > last; i += step) picks.push_back(i);
    budget_.spend(picks.size());
    if (object.is_list()) {
      for (const int64_t i : picks) items.push_back(object.as_list()[i]);
      return Value(std::move(items), object.is_tuple());
    }
    std::vector<char32_t> out;
    for (const int64_t i : picks) out.push_back(code_points[i]);
    return Value(encode_utf8(out));
  }

  Value binary(const std::string& op, const Value& a, const Value& b) {
    if (op == "~")
      return Value(checked_concat(a.is_string() ? a.as_string() : to_str(a),
                                  b.is_string() ? b.as_string() : to_str(b)));
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
    if (op == "+") {
      if (a.is_string() && b.is_string())
        return Value(checked_concat(a.as_string(), b.as_string()));
      if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        budget_.spend(a.as_list().size() + b.as_list().size());
        ValueList items = a.as_list();
        items.insert(items.end(), b.as_list().begin(), b.as_list().end());
        return Value(std::move(items), a.is_tuple());
      }
    }
    if (op == "*") {
      const bool a_count = a.is_number() && !a.is_float();
      const bool b_count = b.is_number() && !b.is_float();
      if ((a.is_string() || a.is_list()) && b_count) return repeat(a, b.as_int());
      if ((b.is_string() || b.is_list()) && a_count) return repeat(b, a.as_int());
    }
    if (op == "%" && a.is_string()) return Value(printf_format(a.as_string(), b));
    throw TemplateError("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" +
                        type_name(b) + "'");
  }

  Value repeat(const Value& v, int64_t times) {
    if (times <= 0) return v.is_string() ? Value("") : Value(ValueList{}, v.is_tuple());
    if (v.is_string()) {
      if (v.as_string().size() * static_cast<double>(times) > Budget::kMaxStringBytes)
        budget_.check_size(Budget::kMaxStringBytes + 1);
      std::string out;
      for (int64_t i = 0; i < times; ++i) out += v.as_string();
      return Value(std::move(out));
    }
    budget_.spend(
        static_cast<uint64_t>(std::min(v.as_list().size() * static_cast<double>(times), 1e18)));
    ValueList items;
    for (int64_t i = 0; i < times; ++i)
      items.insert(items.end(), v.as_list().begin(), v.as_list().end());
    return Value(std::move(items), v.is_tuple());
  }

  static bool compare_op(const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return equals(a, b);
    if (op == "!=") return !equals(a, b);
    if (op == "in") return contains(b, a);
    if (op == "not in") return !contains(b, a);
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    const int c = compare(a, b);
    if (op == "<") return c < 0;
    if (op == "<=") return c <= 0;
    if (op == ">") return c > 0;
    return c >= 0;
  }

  std::vector<ValueDict> frames_;
  std::vector<Value> namespaces_;
  Budget budget_;
  Flow flow_ = Flow::kNormal;
  int depth_ = 0;
};

}  // namespace

std::string render(const Body& body, const ValueDict& context) {
  Interpreter interpreter(context);
  return interpreter.render(body);
}

}  // namespace dq4::jinja
