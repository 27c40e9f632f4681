#include "template/parser.h"

#include <charconv>
#include <set>

#include "template/error.h"

namespace tessera::jinja {
namespace {

using T = Token::Type;

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, int max_depth) : toks_(tokens), max_depth_(max_depth) {}

  Body run() {
    Body body = subparse({});
    if (cur().type != T::End) fail_at(cur(), "unexpected '" + cur().text + "'");
    return body;
  }

 private:
  // ---- token stream -------------------------------------------------------------------
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool is_op(const char* op) const { return cur().type == T::Op && cur().text == op; }
  bool is_name(const char* name) const { return cur().type == T::Name && cur().text == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail_at(const Token& t, const std::string& what) const {
    throw TemplateError("TemplateSyntaxError", what, t.line, t.column);
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case T::End: return "end of template";
      case T::VarEnd: return "end of print statement";
      case T::BlockEnd: return "end of statement block";
      case T::Text: return "template text";
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail_at(cur(), std::string("expected '") + op + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().type != T::Name) fail_at(cur(), "expected a name, got " + describe(cur()));
    return next().text;
  }
  void expect_block_end() {
    if (cur().type != T::BlockEnd) fail_at(cur(), "expected end of statement block, got " + describe(cur()));
    next();
  }

  struct DepthGuard {
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > p.max_depth_) p.fail_at(p.cur(), "template nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
    Parser& p;
  };

  ExprPtr node(Expr::Kind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    return e;
  }

  // ---- statements -----------------------------------------------------------------------
  // Statements until a block tag whose name is in `end` (left unconsumed, after the
  // BlockBegin), or the end of the template when `end` is empty.
  Body subparse(const std::set<std::string>& end) {
    DepthGuard guard(*this);
    Body body;
    for (;;) {
      const Token& t = cur();
      if (t.type == T::End) {
        if (!end.empty()) fail_at(t, "unexpected end of template: expected " + end_list(end));
        return body;
      }
      if (t.type == T::Text) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Text;
        s->text = t.text;
        s->line = t.line;
        s->column = t.column;
        body.push_back(std::move(s));
        next();
      } else if (t.type == T::VarBegin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Output;
        s->line = t.line;
        s->column = t.column;
        s->expr = parse_tuple(true, {});
        if (cur().type != T::VarEnd) fail_at(cur(), "expected end of print statement, got " + describe(cur()));
        next();
        body.push_back(std::move(s));
      } else if (t.type == T::BlockBegin) {
        next();
        if (cur().type != T::Name) fail_at(cur(), "expected a tag name, got " + describe(cur()));
        if (end.count(cur().text)) return body;
        body.push_back(statement());
      } else {
        fail_at(t, "unexpected " + describe(t));
      }
    }
  }
  static std::string end_list(const std::set<std::string>& end) {
    std::string out;
    for (const auto& e : end) out += (out.empty() ? "'" : " or '") + e + "'";
    return out;
  }

  StmtPtr make_stmt(Stmt::Kind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->column = at.column;
    return s;
  }

  StmtPtr statement() {
    const Token& t = cur();
    const std::string name = t.text;
    next();
    if (name == "if") return if_stmt(t);
    if (name == "for") return for_stmt(t);
    if (name == "set") return set_stmt(t);
    if (name == "macro") return macro_stmt(t);
    if (name == "call") return call_stmt(t);
    if (name == "filter") return filter_stmt(t);
    if (name == "with") return with_stmt(t);
    if (name == "generation") {
      auto s = make_stmt(Stmt::Kind::Generation, t);
      expect_block_end();
      s->body = subparse({"endgeneration"});
      next();
      expect_block_end();
      return s;
    }
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) fail_at(t, "'" + name + "' outside of a loop");
      auto s = make_stmt(name == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, t);
      expect_block_end();
      return s;
    }
    fail_at(t, "encountered unknown tag '" + name + "'");
  }

  StmtPtr if_stmt(const Token& at) {
    auto s = make_stmt(Stmt::Kind::If, at);
    ExprPtr cond = parse_tuple(false, {});
    for (;;) {
      expect_block_end();
      Body body = subparse({"elif", "else", "endif"});
      s->branches.emplace_back(std::move(cond), std::move(body));
      const std::string tag = next().text;
      if (tag == "elif") {
        cond = parse_tuple(false, {});
        continue;
      }
      if (tag == "else") {
        expect_block_end();
        s->else_body = subparse({"endif"});
        next();
      }
      expect_block_end();
      return s;
    }
  }

  Target assign_target(bool allow_attr, const std::set<std::string>& end) {
    Target target;
    const bool paren = skip_op("(");
    target.names.push_back(expect_name());
    if (allow_attr && !paren && skip_op(".")) {
      target.attr = expect_name();
      return target;
    }
    while (skip_op(",")) {
      if (cur().type != T::Name || end.count(cur().text)) break;
      target.names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return target;
  }

  StmtPtr for_stmt(const Token& at) {
    auto s = make_stmt(Stmt::Kind::For, at);
    s->target = assign_target(false, {"in"});
    if (!skip_name("in")) fail_at(cur(), "expected 'in' in the for loop, got " + describe(cur()));
    s->expr = parse_tuple(false, {"recursive"}, /*with_condexpr=*/false);
    if (skip_name("if")) s->cond = parse_expression(true);
    if (skip_name("recursive")) s->recursive = true;
    expect_block_end();
    ++loop_depth_;
    s->body = subparse({"endfor", "else"});
    --loop_depth_;
    if (next().text == "else") {
      expect_block_end();
      s->else_body = subparse({"endfor"});
      next();
    }
    expect_block_end();
    return s;
  }

  StmtPtr set_stmt(const Token& at) {
    Target target = assign_target(true, {});
    if (skip_op("=")) {
      auto s = make_stmt(Stmt::Kind::Set, at);
      s->target = std::move(target);
      s->expr = parse_tuple(false, {});
      expect_block_end();
      return s;
    }
    auto s = make_stmt(Stmt::Kind::SetBlock, at);
    s->target = std::move(target);
    if (s->target.names.size() != 1 || !s->target.attr.empty()) fail_at(at, "a block set assigns one name");
    while (skip_op("|")) s->filters.push_back(filter_call(nullptr));
    expect_block_end();
    int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = subparse({"endset"});
    loop_depth_ = saved;
    next();
    expect_block_end();
    return s;
  }

  void signature(std::vector<std::pair<std::string, ExprPtr>>& params) {
    expect_op("(");
    while (!is_op(")")) {
      if (!params.empty()) expect_op(",");
      if (is_op(")")) break;
      std::string name = expect_name();
      ExprPtr def;
      if (skip_op("=")) def = parse_expression(true);
      params.emplace_back(std::move(name), std::move(def));
    }
    expect_op(")");
  }

  StmtPtr macro_stmt(const Token& at) {
    auto s = make_stmt(Stmt::Kind::Macro, at);
    s->text = expect_name();
    signature(s->params);
    expect_block_end();
    int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = subparse({"endmacro"});
    loop_depth_ = saved;
    next();
    expect_block_end();
    return s;
  }

  StmtPtr call_stmt(const Token& at) {
    auto s = make_stmt(Stmt::Kind::CallBlock, at);
    if (is_op("(")) signature(s->params);
    s->expr = parse_expression(true);
    if (s->expr->kind != Expr::Kind::Call) fail_at(at, "expected a call after 'call'");
    expect_block_end();
    int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = subparse({"endcall"});
    loop_depth_ = saved;
    next();
    expect_block_end();
    return s;
  }

  StmtPtr filter_stmt(const Token& at) {
    auto s = make_stmt(Stmt::Kind::FilterBlock, at);
    do s->filters.push_back(filter_call(nullptr));
    while (skip_op("|"));
    expect_block_end();
    s->body = subparse({"endfilter"});
    next();
    expect_block_end();
    return s;
  }

  StmtPtr with_stmt(const Token& at) {
    auto s = make_stmt(Stmt::Kind::With, at);
    while (cur().type != T::BlockEnd) {
      if (!s->assignments.empty()) expect_op(",");
      Target target = assign_target(false, {});
      expect_op("=");
      s->assignments.emplace_back(std::move(target), parse_expression(true));
    }
    expect_block_end();
    s->body = subparse({"endwith"});
    next();
    expect_block_end();
    return s;
  }

  // ---- expressions --------------------------------------------------------------------
  bool at_tuple_end(const std::set<std::string>& extra_end) const {
    if (cur().type == T::VarEnd || cur().type == T::BlockEnd || cur().type == T::End) return true;
    if (cur().type == T::Op && (cur().text == ")" || cur().text == "]" || cur().text == "}" || cur().text == "="))
      return true;
    return cur().type == T::Name && extra_end.count(cur().text);
  }

  // Comma-separated expressions: one without a trailing comma is itself, else a tuple.
  ExprPtr parse_tuple(bool allow_empty_end, const std::set<std::string>& extra_end, bool with_condexpr = true) {
    const Token& at = cur();
    std::vector<ExprPtr> items;
    bool comma = false;
    for (;;) {
      if (!items.empty()) {
        if (!skip_op(",")) break;
        comma = true;
      }
      if (at_tuple_end(extra_end)) break;
      items.push_back(parse_expression(with_condexpr));
    }
    if (items.empty()) {
      if (!allow_empty_end) fail_at(cur(), "expected an expression, got " + describe(cur()));
      fail_at(cur(), "expected an expression, got " + describe(cur()));
    }
    if (items.size() == 1 && !comma) return std::move(items[0]);
    auto e = node(Expr::Kind::Tuple, at);
    e->items = std::move(items);
    return e;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    const Token& at = cur();
    ExprPtr expr = parse_or();
    while (skip_name("if")) {
      auto e = node(Expr::Kind::Cond, at);
      e->items.push_back(std::move(expr));
      e->items.push_back(parse_or());
      e->items.push_back(skip_name("else") ? parse_condexpr() : nullptr);
      expr = std::move(e);
    }
    return expr;
  }

  ExprPtr binary(const Token& at, const std::string& op, ExprPtr l, ExprPtr r) {
    auto e = node(Expr::Kind::Binary, at);
    e->name = op;
    e->items.push_back(std::move(l));
    e->items.push_back(std::move(r));
    return e;
  }

  ExprPtr parse_or() {
    const Token& at = cur();
    ExprPtr l = parse_and();
    while (skip_name("or")) l = binary(at, "or", std::move(l), parse_and());
    return l;
  }
  ExprPtr parse_and() {
    const Token& at = cur();
    ExprPtr l = parse_not();
    while (skip_name("and")) l = binary(at, "and", std::move(l), parse_not());
    return l;
  }
  ExprPtr parse_not() {
    const Token& at = cur();
    if (skip_name("not")) {
      DepthGuard guard(*this);
      auto e = node(Expr::Kind::Unary, at);
      e->name = "not";
      e->items.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    const Token& at = cur();
    ExprPtr first = parse_math1();
    ExprPtr e;
    for (;;) {
      std::string op;
      if (cur().type == T::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                  cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && peek().type == T::Name && peek().text == "in") {
        next();
        next();
        op = "not in";
      } else {
        break;
      }
      if (!e) {
        e = node(Expr::Kind::Compare, at);
        e->items.push_back(std::move(first));
      }
      e->ops.push_back(op);
      e->items.push_back(parse_math1());
    }
    return e ? std::move(e) : std::move(first);
  }
  ExprPtr parse_math1() {
    const Token& at = cur();
    ExprPtr l = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = next().text;
      l = binary(at, op, std::move(l), parse_concat());
    }
    return l;
  }
  ExprPtr parse_concat() {
    const Token& at = cur();
    ExprPtr l = parse_math2();
    while (skip_op("~")) l = binary(at, "~", std::move(l), parse_math2());
    return l;
  }
  ExprPtr parse_math2() {
    const Token& at = cur();
    ExprPtr l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = next().text;
      l = binary(at, op, std::move(l), parse_pow());
    }
    return l;
  }
  ExprPtr parse_pow() {
    const Token& at = cur();
    ExprPtr l = parse_unary(true);
    while (skip_op("**")) l = binary(at, "**", std::move(l), parse_unary(true));
    return l;
  }
  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    const Token& at = cur();
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      e = node(Expr::Kind::Unary, at);
      e->name = next().text;
      e->items.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    switch (t.type) {
      case T::Name: {
        next();
        if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
          auto e = node(Expr::Kind::Literal, t);
          e->literal = Value::boolean(t.text[0] == 't' || t.text[0] == 'T');
          return e;
        }
        if (t.text == "none" || t.text == "None") {
          auto e = node(Expr::Kind::Literal, t);
          e->literal = Value::none();
          return e;
        }
        auto e = node(Expr::Kind::Name, t);
        e->name = t.text;
        return e;
      }
      case T::String: {
        std::string s;
        while (cur().type == T::String) s += next().text;
        auto e = node(Expr::Kind::Literal, t);
        e->literal = Value::string(std::move(s));
        return e;
      }
      case T::Int: {
        next();
        auto e = node(Expr::Kind::Literal, t);
        int64_t v = 0;
        auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
        if (ec == std::errc()) {
          e->literal = Value::integer(v);
        } else {
          e->literal = Value::number(std::strtod(t.text.c_str(), nullptr));  // past int64: Python keeps a big int
        }
        return e;
      }
      case T::Float: {
        next();
        auto e = node(Expr::Kind::Literal, t);
        e->literal = Value::number(std::strtod(t.text.c_str(), nullptr));
        return e;
      }
      case T::Op:
        if (t.text == "(") {
          next();
          if (skip_op(")")) {
            auto e = node(Expr::Kind::Tuple, t);
            return e;
          }
          ExprPtr inner = parse_tuple(false, {});
          expect_op(")");
          return inner;
        }
        if (t.text == "[") {
          next();
          auto e = node(Expr::Kind::List, t);
          while (!is_op("]")) {
            if (!e->items.empty()) expect_op(",");
            if (is_op("]")) break;
            e->items.push_back(parse_expression(true));
          }
          expect_op("]");
          return e;
        }
        if (t.text == "{") {
          next();
          auto e = node(Expr::Kind::Dict, t);
          while (!is_op("}")) {
            if (!e->items.empty()) expect_op(",");
            if (is_op("}")) break;
            e->items.push_back(parse_expression(true));
            expect_op(":");
            e->items.push_back(parse_expression(true));
          }
          expect_op("}");
          return e;
        }
        break;
      default: break;
    }
    fail_at(t, "unexpected " + describe(t));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    for (;;) {
      const Token& t = cur();
      if (is_op(".") || is_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
      (void)t;
    }
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    for (;;) {
      if (is_op("|")) {
        next();
        e = filter_call(std::move(e));
      } else if (is_name("is")) {
        e = parse_test(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj) {
    const Token& t = next();
    if (t.text == ".") {
      const Token& attr = cur();
      if (attr.type == T::Name) {
        next();
        auto e = node(Expr::Kind::Attr, t);
        e->name = attr.text;
        e->items.push_back(std::move(obj));
        return e;
      }
      if (attr.type == T::Int) {
        next();
        auto e = node(Expr::Kind::Item, t);
        e->items.push_back(std::move(obj));
        auto idx = node(Expr::Kind::Literal, attr);
        int64_t index = 0;
        auto [end, ec] = std::from_chars(attr.text.data(), attr.text.data() + attr.text.size(), index);
        if (ec != std::errc()) fail_at(attr, "index '" + attr.text + "' is too large");
        idx->literal = Value::integer(index);
        e->items.push_back(std::move(idx));
        return e;
      }
      fail_at(attr, "expected a name after '.', got " + describe(attr));
    }
    // `[`: an index, a slice, or a tuple of them (a tuple index).
    std::vector<ExprPtr> parts;
    bool is_slice = false;
    auto slice_part = [&]() -> ExprPtr { return (is_op(":") || is_op("]")) ? nullptr : parse_expression(true); };
    ExprPtr first = slice_part();
    if (is_op(":")) {
      is_slice = true;
      next();
      ExprPtr stop = slice_part();
      ExprPtr step;
      if (skip_op(":")) step = slice_part();
      auto e = node(Expr::Kind::Slice, t);
      e->items.push_back(std::move(obj));
      e->items.push_back(std::move(first));
      e->items.push_back(std::move(stop));
      e->items.push_back(std::move(step));
      expect_op("]");
      return e;
    }
    (void)is_slice;
    if (!first) fail_at(cur(), "expected an index, got " + describe(cur()));
    if (is_op(",")) {
      auto tuple = node(Expr::Kind::Tuple, t);
      tuple->items.push_back(std::move(first));
      while (skip_op(",")) {
        if (is_op("]")) break;
        tuple->items.push_back(parse_expression(true));
      }
      first = std::move(tuple);
    }
    expect_op("]");
    auto e = node(Expr::Kind::Item, t);
    e->items.push_back(std::move(obj));
    e->items.push_back(std::move(first));
    return e;
  }

  // Arguments of a call after '(' into `e` (items from index 1, kwargs, star, dstar).
  void call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (skip_op("*")) {
        e.star = parse_expression(true);
      } else if (skip_op("**")) {
        e.dstar = parse_expression(true);
      } else if (cur().type == T::Name && peek().type == T::Op && peek().text == "=") {
        std::string key = next().text;
        next();
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e.kwargs.empty()) fail_at(cur(), "positional argument after keyword argument");
        e.items.push_back(parse_expression(true));
      }
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = node(Expr::Kind::Call, cur());
    e->line = callee->line;  // errors point at what was called
    e->column = callee->column;
    e->items.push_back(std::move(callee));
    call_args(*e);
    return e;
  }

  std::string dotted_name() {
    std::string name = expect_name();
    while (is_op(".") && peek().type == T::Name) {
      next();
      name += "." + next().text;
    }
    return name;
  }

  ExprPtr filter_call(ExprPtr subject) {
    auto e = node(Expr::Kind::Filter, cur());
    e->name = dotted_name();
    e->items.push_back(std::move(subject));
    if (is_op("(")) call_args(*e);
    return e;
  }

  ExprPtr parse_test(ExprPtr subject) {
    auto e = node(Expr::Kind::Test, cur());
    next();  // is
    if (skip_name("not")) e->negated = true;
    e->name = dotted_name();
    e->items.push_back(std::move(subject));
    if (is_op("(")) {
      call_args(*e);
    } else {
      const Token& t = cur();
      const bool arg_start = t.type == T::Name || t.type == T::String || t.type == T::Int || t.type == T::Float ||
                             (t.type == T::Op && (t.text == "(" || t.text == "[" || t.text == "{"));
      if (arg_start && !(t.type == T::Name && (t.text == "else" || t.text == "or" || t.text == "and"))) {
        ExprPtr arg = parse_primary();
        e->items.push_back(parse_postfix(std::move(arg)));
      }
    }
    return e;
  }

  const std::vector<Token>& toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  int max_depth_;
  int loop_depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens, int max_depth) { return Parser(tokens, max_depth).run(); }

}  // namespace tessera::jinja
