#pragma once
// The parsed template: expressions and statements of the Jinja2 subset chat templates use.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lexer.h"
#include "value.h"

namespace dq4::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // value
    kName,       // name
    kList,       // items
    kTuple,      // items
    kDict,       // keys[i]: items[i]
    kAttribute,  // a.name
    kSubscript,  // a[b]
    kSlice,      // a[b:c:d], each bound may be null
    kCall,       // a(items..., keywords...)
    kFilter,     // a | name(items..., keywords...); a is null in {% filter %} / {% set %} blocks
    kTest,       // a is [not] name(items...); negated
    kNegate,     // -a
    kPlus,       // +a
    kNot,        // not a
    kBinary,     // a op b: + - * / // % ** ~
    kAnd,        // a and b
    kOr,         // a or b
    kCompare,    // a ops[0] items[0] ops[1] items[1] ...: == != < <= > >= in "not in"
    kCondition,  // a if b else c (c may be null)
  };

  Kind kind;
  Location location;
  Value value;
  std::string name;
  std::vector<ExprPtr> items;
  std::vector<ExprPtr> keys;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  std::vector<std::string> ops;
  ExprPtr a, b, c, d;
  bool negated = false;
  int depth = 1;  // of the tree below, bounded by the parser

  Expr(Kind k, Location at) : kind(k), location(at) {}
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // conditions[i] -> bodies[i]; else_body
    kFor,       // for targets in expr [if filter]: body; else_body
    kSet,       // set targets = expr, or set namespace_name.attribute = expr
    kSetBlock,  // set targets[0] [| filter] %}body{% endset
    kMacro,     // macro name(params with defaults): body
    kFilter,    // filter filter: body
    kBreak,
    kContinue,
    kBlock,  // a body with no effect of its own ({% generation %})
  };

  Kind kind;
  Location location;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<std::string> targets;
  std::string attribute;  // kSet on a namespace: targets[0].attribute
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  Body body;
  Body else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // kMacro: name, default (or null)

  Stmt(Kind k, Location at) : kind(k), location(at) {}
};

}  // namespace dq4::jinja
