#include "parser.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <initializer_list>

#include "builtins.h"
#include "dq4/kernels/error.h"

namespace dq4::jinja {
namespace {

using Kind = Expr::Kind;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse_template() {
    Body body = parse_body({}, "", {});
    return body;
  }

 private:
  // ---- tokens ------------------------------------------------------------------------------
  const Token& current() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& advance() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool at_operator(const char* op) const {
    return current().type == TokenType::kOperator && current().text == op;
  }
  bool at_name(const char* name) const {
    return current().type == TokenType::kName && current().text == name;
  }
  bool skip_operator(const char* op) {
    if (!at_operator(op)) return false;
    advance();
    return true;
  }
  bool skip_name(const char* name) {
    if (!at_name(name)) return false;
    advance();
    return true;
  }

  static std::string show(const Token& t) {
    switch (t.type) {
      case TokenType::kText:
        return "text";
      case TokenType::kVariableBegin:
        return "'{{'";
      case TokenType::kVariableEnd:
        return "'}}'";
      case TokenType::kBlockBegin:
        return "'{%'";
      case TokenType::kBlockEnd:
        return "'%}'";
      case TokenType::kString:
        return "a string";
      case TokenType::kEnd:
        return "the end of the template";
      default:
        return "'" + t.text + "'";
    }
  }

  [[noreturn]] void fail(const Location& at, const std::string& message) const {
    throw Error("chat template " + describe(at) + ": " + message);
  }
  [[noreturn]] void fail_here(const std::string& expected) const {
    fail(current().location, "expected " + expected + ", got " + show(current()));
  }
  void expect_operator(const char* op) {
    if (!skip_operator(op)) fail_here(std::string("'") + op + "'");
  }
  void expect_block_end() {
    if (current().type != TokenType::kBlockEnd) fail_here("'%}'");
    advance();
  }
  std::string expect_name(const char* what) {
    if (current().type != TokenType::kName) fail_here(what);
    return advance().text;
  }

  // Counts nesting on the way down, so recursion stays bounded.
  struct Nested {
    Parser& p;
    Nested(Parser& parser, const Location& at) : p(parser) {
      if (++p.depth_ > kMaxParseDepth)
        p.fail(at, "nested more than " + std::to_string(kMaxParseDepth) + " levels deep");
    }
    ~Nested() { --p.depth_; }
  };

  ExprPtr node(Kind kind, const Location& at) { return std::make_unique<Expr>(kind, at); }

  // Records the depth of a finished node; chains like a+b+c+... grow depth without recursion.
  ExprPtr seal(ExprPtr e) {
    int deepest = 0;
    for (const ExprPtr* child : {&e->a, &e->b, &e->c, &e->d})
      if (*child) deepest = std::max(deepest, (*child)->depth);
    for (const auto& item : e->items) deepest = std::max(deepest, item->depth);
    for (const auto& key : e->keys) deepest = std::max(deepest, key->depth);
    for (const auto& [name, value] : e->keywords) deepest = std::max(deepest, value->depth);
    e->depth = deepest + 1;
    if (e->depth > kMaxParseDepth)
      fail(e->location,
           "expression nested more than " + std::to_string(kMaxParseDepth) + " levels deep");
    return e;
  }

  // ---- statements --------------------------------------------------------------------------
  // Parses until `{% <one of end_tags>`; leaves the current token on that tag's name.
  Body parse_body(std::initializer_list<const char*> end_tags, const char* opener,
                  const Location& opened_at) {
    Body body;
    while (true) {
      const Token& t = current();
      if (t.type == TokenType::kEnd) {
        if (end_tags.size() == 0) return body;
        fail(opened_at, std::string("'") + opener + "' is never closed (expected '{% " +
                            *(end_tags.end() - 1) + " %}' before the end of the template)");
      }
      if (t.type == TokenType::kText) {
        auto text = std::make_unique<Stmt>(Stmt::Kind::kText, t.location);
        text->text = t.text;
        body.push_back(std::move(text));
        advance();
      } else if (t.type == TokenType::kVariableBegin) {
        auto output = std::make_unique<Stmt>(Stmt::Kind::kOutput, t.location);
        advance();
        output->expr = parse_tuple(true);
        if (current().type != TokenType::kVariableEnd) fail_here("'}}'");
        advance();
        body.push_back(std::move(output));
      } else if (t.type == TokenType::kBlockBegin) {
        advance();
        if (current().type != TokenType::kName) fail_here("a tag name");
        for (const char* end : end_tags)
          if (current().text == end) return body;
        body.push_back(parse_statement());
      } else {
        fail_here("text, '{{' or '{%'");
      }
    }
  }

  StmtPtr parse_statement() {
    const Token& name = current();
    const Location at = name.location;
    const Nested nested(*this, at);
    const std::string tag = name.text;
    advance();
    if (tag == "if") return parse_if(at);
    if (tag == "for") return parse_for(at);
    if (tag == "set") return parse_set(at);
    if (tag == "macro") return parse_macro(at);
    if (tag == "filter") return parse_filter_block(at);
    if (tag == "generation") {  // transformers' assistant-mask marker: renders its body
      auto block = std::make_unique<Stmt>(Stmt::Kind::kBlock, at);
      expect_block_end();
      block->body = parse_body({"endgeneration"}, "generation", at);
      advance();
      expect_block_end();
      return block;
    }
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail(at, "'" + tag + "' outside of a for loop");
      expect_block_end();
      return std::make_unique<Stmt>(tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue,
                                    at);
    }
    static const char* const kUnsupported[] = {"include", "import", "from", "extends",
                                               "block",   "call",   "with", "autoescape",
                                               "do",      "trans",  "print"};
    for (const char* unsupported : kUnsupported)
      if (tag == unsupported) fail(at, "'{% " + tag + " %}' is not supported in chat templates");
    if (tag.rfind("end", 0) == 0 || tag == "elif" || tag == "else")
      fail(at, "unexpected '{% " + tag + " %}' (no open block it could close)");
    fail(at, "unknown tag '" + tag + "'");
  }

  StmtPtr parse_if(const Location& at) {
    auto stmt = std::make_unique<Stmt>(Stmt::Kind::kIf, at);
    stmt->conditions.push_back(parse_tuple(true));
    expect_block_end();
    while (true) {
      stmt->bodies.push_back(parse_body({"elif", "else", "endif"}, "if", at));
      const std::string tag = advance().text;
      if (tag == "elif") {
        stmt->conditions.push_back(parse_tuple(true));
        expect_block_end();
        continue;
      }
      if (tag == "else") {
        expect_block_end();
        stmt->else_body = parse_body({"endif"}, "if", at);
        advance();
      }
      expect_block_end();
      return stmt;
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> targets;
    const bool parenthesized = skip_operator("(");
    do {
      targets.push_back(expect_name("a variable name"));
    } while (skip_operator(",") && current().type == TokenType::kName);
    if (parenthesized) expect_operator(")");
    return targets;
  }

  StmtPtr parse_for(const Location& at) {
    auto stmt = std::make_unique<Stmt>(Stmt::Kind::kFor, at);
    stmt->targets = parse_targets();
    if (!skip_name("in")) fail_here("'in'");
    stmt->expr = parse_tuple(false);
    if (skip_name("if")) stmt->filter = parse_expression(true);
    if (at_name("recursive")) fail(current().location, "recursive loops are not supported");
    expect_block_end();
    ++loop_depth_;
    stmt->body = parse_body({"else", "endfor"}, "for", at);
    --loop_depth_;
    if (advance().text == "else") {
      expect_block_end();
      stmt->else_body = parse_body({"endfor"}, "for", at);
      advance();
    }
    expect_block_end();
    return stmt;
  }

  StmtPtr parse_set(const Location& at) {
    if (current().type == TokenType::kName && peek().type == TokenType::kOperator &&
        peek().text == ".") {
      auto stmt = std::make_unique<Stmt>(Stmt::Kind::kSet, at);
      stmt->targets.push_back(advance().text);
      advance();
      stmt->attribute = expect_name("an attribute name");
      expect_operator("=");
      stmt->expr = parse_tuple(true);
      expect_block_end();
      return stmt;
    }
    std::vector<std::string> targets = parse_targets();
    if (skip_operator("=")) {
      auto stmt = std::make_unique<Stmt>(Stmt::Kind::kSet, at);
      stmt->targets = std::move(targets);
      stmt->expr = parse_tuple(true);
      expect_block_end();
      return stmt;
    }
    if (targets.size() != 1) fail(at, "a {% set %} block assigns exactly one name");
    auto stmt = std::make_unique<Stmt>(Stmt::Kind::kSetBlock, at);
    stmt->targets = std::move(targets);
    if (at_operator("|")) stmt->filter = parse_filter_chain(nullptr);
    expect_block_end();
    stmt->body = parse_body({"endset"}, "set", at);
    advance();
    expect_block_end();
    return stmt;
  }

  StmtPtr parse_macro(const Location& at) {
    auto stmt = std::make_unique<Stmt>(Stmt::Kind::kMacro, at);
    stmt->text = expect_name("a macro name");
    expect_operator("(");
    while (!at_operator(")")) {
      std::string param = expect_name("a parameter name");
      ExprPtr default_value;
      if (skip_operator("=")) default_value = parse_expression(true);
      stmt->params.emplace_back(std::move(param), std::move(default_value));
      if (!skip_operator(",")) break;
    }
    expect_operator(")");
    expect_block_end();
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;  // a macro body is not inside the caller's loop
    stmt->body = parse_body({"endmacro"}, "macro", at);
    loop_depth_ = saved_loops;
    advance();
    expect_block_end();
    return stmt;
  }

  StmtPtr parse_filter_block(const Location& at) {
    auto stmt = std::make_unique<Stmt>(Stmt::Kind::kFilter, at);
    stmt->filter = parse_filter_chain(nullptr);
    expect_block_end();
    stmt->body = parse_body({"endfilter"}, "filter", at);
    advance();
    expect_block_end();
    return stmt;
  }

  // ---- expressions (Jinja2's precedence, loosest first) -------------------------------------
  // `a, b` makes a tuple where Jinja2 allows one ({{ }}, set, for ... in).
  ExprPtr parse_tuple(bool with_condition) {
    const Location at = current().location;
    ExprPtr first = parse_expression(with_condition);
    if (!at_operator(",")) return first;
    auto tuple = node(Kind::kTuple, at);
    tuple->items.push_back(std::move(first));
    while (skip_operator(",")) {
      if (current().type == TokenType::kBlockEnd || current().type == TokenType::kVariableEnd)
        break;
      tuple->items.push_back(parse_expression(with_condition));
    }
    return seal(std::move(tuple));
  }

  ExprPtr parse_expression(bool with_condition) {
    const Nested nested(*this, current().location);
    return with_condition ? parse_condition() : parse_or();
  }

  ExprPtr parse_condition() {
    ExprPtr expr = parse_or();
    while (at_name("if")) {
      auto cond = node(Kind::kCondition, advance().location);
      cond->b = parse_or();
      cond->a = std::move(expr);
      if (skip_name("else")) cond->c = parse_condition();
      expr = seal(std::move(cond));
    }
    return expr;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (at_name("or")) {
      auto op = node(Kind::kOr, advance().location);
      op->a = std::move(left);
      op->b = parse_and();
      left = seal(std::move(op));
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (at_name("and")) {
      auto op = node(Kind::kAnd, advance().location);
      op->a = std::move(left);
      op->b = parse_not();
      left = seal(std::move(op));
    }
    return left;
  }

  ExprPtr parse_not() {
    if (at_name("not")) {
      const Nested nested(*this, current().location);
      auto op = node(Kind::kNot, advance().location);
      op->a = parse_not();
      return seal(std::move(op));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Location at = current().location;
    ExprPtr left = parse_math1();
    ExprPtr compare;
    while (true) {
      std::string op;
      if (current().type == TokenType::kOperator &&
          (current().text == "==" || current().text == "!=" || current().text == "<" ||
           current().text == "<=" || current().text == ">" || current().text == ">=")) {
        op = advance().text;
      } else if (at_name("in")) {
        advance();
        op = "in";
      } else if (at_name("not") && peek().type == TokenType::kName && peek().text == "in") {
        advance();
        advance();
        op = "not in";
      } else {
        break;
      }
      if (!compare) {
        compare = node(Kind::kCompare, at);
        compare->a = std::move(left);
      }
      compare->ops.push_back(op);
      compare->items.push_back(parse_math1());
    }
    return compare ? seal(std::move(compare)) : std::move(left);
  }

  ExprPtr binary(ExprPtr left, const Token& op, ExprPtr right) {
    auto e = node(Kind::kBinary, op.location);
    e->name = op.text;
    e->a = std::move(left);
    e->b = std::move(right);
    return seal(std::move(e));
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (at_operator("+") || at_operator("-")) {
      const Token op = advance();
      left = binary(std::move(left), op, parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (at_operator("~")) {
      const Token op = advance();
      left = binary(std::move(left), op, parse_math2());
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (at_operator("*") || at_operator("/") || at_operator("//") || at_operator("%")) {
      const Token op = advance();
      left = binary(std::move(left), op, parse_pow());
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (at_operator("**")) {
      const Token op = advance();
      left = binary(std::move(left), op, parse_unary(true));
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filters) {
    ExprPtr e;
    if (at_operator("-") || at_operator("+")) {
      const Nested nested(*this, current().location);
      const Token op = advance();
      e = node(op.text == "-" ? Kind::kNegate : Kind::kPlus, op.location);
      e->a = parse_unary(false);
      e = seal(std::move(e));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    return with_filters ? parse_filters(std::move(e)) : std::move(e);
  }

  ExprPtr parse_primary() {
    const Token& t = current();
    const Location at = t.location;
    switch (t.type) {
      case TokenType::kName: {
        const std::string name = advance().text;
        auto e = node(Kind::kLiteral, at);
        if (name == "true" || name == "True") {
          e->value = Value(true);
        } else if (name == "false" || name == "False") {
          e->value = Value(false);
        } else if (name == "none" || name == "None") {
          e->value = Value::none();
        } else {
          e->kind = Kind::kName;
          e->name = name;
        }
        return seal(std::move(e));
      }
      case TokenType::kString: {
        std::string text;
        while (current().type == TokenType::kString) text += advance().text;  // "a" "b" is "ab"
        auto e = node(Kind::kLiteral, at);
        e->value = Value(std::move(text));
        return seal(std::move(e));
      }
      case TokenType::kInteger: {
        errno = 0;
        const long long v = std::strtoll(t.text.c_str(), nullptr, 10);
        if (errno == ERANGE) fail(at, "integer literal " + t.text + " is too large");
        advance();
        auto e = node(Kind::kLiteral, at);
        e->value = Value(static_cast<int64_t>(v));
        return seal(std::move(e));
      }
      case TokenType::kFloat: {
        auto e = node(Kind::kLiteral, at);
        e->value = Value(std::strtod(advance().text.c_str(), nullptr));
        return seal(std::move(e));
      }
      case TokenType::kOperator:
        if (t.text == "(") return parse_parenthesized();
        if (t.text == "[") return parse_list();
        if (t.text == "{") return parse_dict();
        break;
      default:
        break;
    }
    fail_here("an expression");
  }

  ExprPtr parse_parenthesized() {
    const Nested nested(*this, current().location);
    const Location at = advance().location;
    if (skip_operator(")")) return seal(node(Kind::kTuple, at));
    ExprPtr first = parse_expression(true);
    if (skip_operator(")")) return first;
    auto tuple = node(Kind::kTuple, at);
    tuple->items.push_back(std::move(first));
    while (skip_operator(",")) {
      if (at_operator(")")) break;
      tuple->items.push_back(parse_expression(true));
    }
    expect_operator(")");
    return seal(std::move(tuple));
  }

  ExprPtr parse_list() {
    const Nested nested(*this, current().location);
    auto list = node(Kind::kList, advance().location);
    while (!at_operator("]")) {
      list->items.push_back(parse_expression(true));
      if (!skip_operator(",")) break;
    }
    expect_operator("]");
    return seal(std::move(list));
  }

  ExprPtr parse_dict() {
    const Nested nested(*this, current().location);
    auto dict = node(Kind::kDict, advance().location);
    while (!at_operator("}")) {
      dict->keys.push_back(parse_expression(true));
      expect_operator(":");
      dict->items.push_back(parse_expression(true));
      if (!skip_operator(",")) break;
    }
    expect_operator("}");
    return seal(std::move(dict));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (at_operator(".")) {
        const Location at = advance().location;
        if (current().type == TokenType::kInteger) {  // items.0 is items[0]
          auto sub = node(Kind::kSubscript, at);
          sub->a = std::move(e);
          sub->b = parse_primary();
          e = seal(std::move(sub));
        } else {
          auto attr = node(Kind::kAttribute, at);
          attr->name = expect_name("an attribute name");
          attr->a = std::move(e);
          e = seal(std::move(attr));
        }
      } else if (at_operator("[")) {
        e = parse_subscript(std::move(e));
      } else if (at_operator("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr object) {
    const Nested nested(*this, current().location);
    const Location at = advance().location;
    ExprPtr bounds[3];
    int colons = 0;
    while (!at_operator("]")) {
      if (skip_operator(":")) {
        if (++colons > 2) fail_here("']'");
        continue;
      }
      if (bounds[colons]) fail_here("':' or ']'");
      bounds[colons] = parse_expression(true);
    }
    advance();
    if (colons == 0 && !bounds[0]) fail(at, "empty subscript '[]'");
    auto e = node(colons == 0 ? Kind::kSubscript : Kind::kSlice, at);
    e->a = std::move(object);
    if (colons == 0) {
      e->b = std::move(bounds[0]);
    } else {
      e->b = std::move(bounds[0]);
      e->c = std::move(bounds[1]);
      e->d = std::move(bounds[2]);
    }
    return seal(std::move(e));
  }

  void parse_arguments(Expr& call) {
    const Nested nested(*this, current().location);
    expect_operator("(");
    while (!at_operator(")")) {
      if (at_operator("*") || at_operator("**"))
        fail(current().location, "'*args' / '**kwargs' in calls are not supported");
      if (current().type == TokenType::kName && peek().type == TokenType::kOperator &&
          peek().text == "=") {
        std::string name = advance().text;
        advance();
        call.keywords.emplace_back(std::move(name), parse_expression(true));
      } else {
        if (!call.keywords.empty())
          fail(current().location, "positional argument after a keyword argument");
        call.items.push_back(parse_expression(true));
      }
      if (!skip_operator(",")) break;
    }
    expect_operator(")");
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto call = node(Kind::kCall, current().location);
    call->a = std::move(callee);
    parse_arguments(*call);
    return seal(std::move(call));
  }

  // `| name(args)` and `is [not] name args` after an operand (null for block filters).
  ExprPtr parse_filters(ExprPtr e) {
    while (true) {
      if (at_operator("|")) {
        e = parse_filter_chain(std::move(e), true);
      } else if (at_name("is")) {
        auto test = node(Kind::kTest, advance().location);
        test->negated = skip_name("not");
        test->name = expect_name("a test name");
        if (!is_test(test->name)) fail(test->location, "unknown test '" + test->name + "'");
        if (at_operator("(")) {
          parse_arguments(*test);
        } else if ((current().type == TokenType::kName || current().type == TokenType::kString ||
                    current().type == TokenType::kInteger || current().type == TokenType::kFloat ||
                    at_operator("(") || at_operator("[") || at_operator("{")) &&
                   !at_name("else") && !at_name("or") && !at_name("and")) {
          if (at_name("is")) fail(current().location, "tests cannot be chained with 'is'");
          test->items.push_back(parse_postfix(parse_primary()));
        }
        test->a = std::move(e);
        e = seal(std::move(test));
      } else if (at_operator("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  // One or more `name(args)` filters joined by '|'; the first '|' is optional for {% filter %}.
  ExprPtr parse_filter_chain(ExprPtr operand, bool single = false) {
    do {
      skip_operator("|");
      auto filter = node(Kind::kFilter, current().location);
      filter->name = expect_name("a filter name");
      if (!is_filter(filter->name)) fail(filter->location, "unknown filter '" + filter->name + "'");
      if (at_operator("(")) parse_arguments(*filter);
      filter->a = std::move(operand);
      operand = seal(std::move(filter));
    } while (!single && at_operator("|"));
    return operand;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse(std::string_view source) { return Parser(tokenize(source)).parse_template(); }

}  // namespace dq4::jinja
