#pragma once
// The values a chat template computes with, and their Python semantics (what Jinja2 inherits):
// truthiness, str(), repr(), ==, ordering. Lists and dicts are immutable once built and shared;
// namespace() objects are the one mutable kind, as in Jinja2's sandbox.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace dq4::jinja {

// A failure while evaluating a template; the interpreter adds the template position.
class TemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Value;
using ValueList = std::vector<Value>;

// A dict keeps insertion order, as Python's does (tojson and items() depend on it).
class ValueDict {
 public:
  ValueDict() = default;
  // Entries whose keys are known to be distinct (no lookups while building).
  explicit ValueDict(std::vector<std::pair<std::string, Value>> entries);
  const Value* find(std::string_view key) const;
  void set(std::string key, Value value);
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }
  size_t size() const;

 private:
  std::vector<std::pair<std::string, Value>> entries_;
};

struct CallArgs {
  ValueList positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index` or named `name`, or nullptr when absent.
  const Value* get(size_t index, std::string_view name) const;
};
using Function = std::function<Value(const CallArgs&)>;

// An undefined value remembers why it is undefined, for the error when it is used.
struct Undefined {
  std::string hint;  // e.g. "'tools' is undefined"
};
struct Tuple {};  // tag: a list that prints like a Python tuple

class Value {
 public:
  enum class Kind {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kNamespace,
    kFunction
  };

  Value() : data_(Undefined{"value is undefined"}) {}
  static Value undefined(std::string hint) { return Value(Undefined{std::move(hint)}); }
  static Value none() { return Value(nullptr); }
  Value(bool b) : data_(b) {}     // NOLINT: values convert implicitly, as in Python
  Value(int64_t i) : data_(i) {}  // NOLINT
  Value(int i) : data_(static_cast<int64_t>(i)) {}  // NOLINT
  Value(double f) : data_(f) {}                     // NOLINT
  // Strings are shared, not copied, as values move through scopes (contents can be long).
  Value(std::string s) : data_(std::make_shared<const std::string>(std::move(s))) {}  // NOLINT
  Value(const char* s) : Value(std::string(s)) {}                                     // NOLINT
  // Containers nested deeper than kMaxNesting are a TemplateError: printing, comparing and
  // serializing them recurse.
  Value(ValueList list, bool is_tuple = false);  // NOLINT
  Value(ValueDict dict);                         // NOLINT
  static Value make_namespace(ValueDict dict);
  static Value function(std::string name, Function f);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_tuple() const { return is_list() && std::get<ListData>(data_).is_tuple; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_namespace() const { return kind() == Kind::kNamespace; }
  bool is_function() const { return kind() == Kind::kFunction; }

  bool as_bool() const { return std::get<bool>(data_); }
  // An int or a bool (Python's bool is an int).
  int64_t as_int() const { return is_bool() ? as_bool() : std::get<int64_t>(data_); }
  // Any number as a double.
  double as_double() const;
  const std::string& as_string() const {
    return *std::get<std::shared_ptr<const std::string>>(data_);
  }
  const ValueList& as_list() const { return *std::get<ListData>(data_).items; }
  const ValueDict& as_dict() const { return *std::get<DictData>(data_).dict; }
  ValueDict& as_namespace() const { return *std::get<NamespaceData>(data_).dict; }
  const std::string& undefined_hint() const { return std::get<Undefined>(data_).hint; }
  const std::string& function_name() const { return std::get<FunctionData>(data_).name; }
  Value call(const CallArgs& args) const { return (*std::get<FunctionData>(data_).f)(args); }
  // Same object (Python's `is`): identity for containers, equality for scalars.
  bool same_as(const Value& other) const;
  // 0 for scalars, 1 + the deepest item for containers.
  int nesting() const;

  static constexpr int kMaxNesting = 200;

 private:
  struct ListData {
    std::shared_ptr<const ValueList> items;
    bool is_tuple;
    int nesting;
  };
  struct DictData {
    std::shared_ptr<const ValueDict> dict;
    int nesting;
  };
  struct NamespaceData {
    std::shared_ptr<ValueDict> dict;
  };
  struct FunctionData {
    std::string name;
    std::shared_ptr<const Function> f;
  };
  template <typename T>
  explicit Value(T data, int) : data_(std::move(data)) {}
  explicit Value(Undefined u) : data_(std::move(u)) {}
  explicit Value(std::nullptr_t) : data_(nullptr) {}

  // Order matches Kind.
  std::variant<Undefined, std::nullptr_t, bool, int64_t, double, std::shared_ptr<const std::string>,
               ListData, DictData, NamespaceData, FunctionData>
      data_;
};

// Python's type name of the value ("str", "int", "NoneType", ...), for error messages.
std::string type_name(const Value& v);
bool truthy(const Value& v);
// str(v) as Jinja2 prints it: None -> "None", True -> "True", undefined -> "".
std::string to_str(const Value& v);
// repr(v) (strings quoted), as lists and dicts print their items.
std::string repr(const Value& v);
// Python's repr of a float: shortest round-trip digits, "1.0", "1e+16", "1e-05".
std::string float_repr(double f);
// int(f) truncated toward zero, or nullopt when that does not fit 64 bits (NaN and infinities
// included): Python's ints are unbounded, dq4's are not.
std::optional<int64_t> truncate_to_int(double f);
bool equals(const Value& a, const Value& b);
// -1, 0 or 1 for numbers, strings and lists; TemplateError for other pairs.
int compare(const Value& a, const Value& b);
// The items a `for` loop visits: list items, dict keys, string characters; undefined is empty.
ValueList iterate(const Value& v);
// Python's `a in b`.
bool contains(const Value& container, const Value& item);

}  // namespace dq4::jinja
