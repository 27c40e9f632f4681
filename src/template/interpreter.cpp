#include "template/interpreter.h"

#include <cmath>
#include <limits>

#include "template/error.h"

namespace tessera::jinja {

struct DepthScope {
  explicit DepthScope(Interpreter& interp) : in(interp) {
    if (++in.depth_ > in.limits_.max_depth) {
      --in.depth_;
      fail("LimitError", "calls nested deeper than " + std::to_string(in.limits_.max_depth));
    }
  }
  ~DepthScope() { --in.depth_; }
  Interpreter& in;
};

namespace {

// Stamps an error thrown inside `f` with the position of `line`/`column` if it has none.
template <typename F>
auto at_position(int line, int column, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (TemplateError& e) {
    if (e.line == 0) {
      e.line = line;
      e.column = column;
    }
    throw;
  }
}

int64_t as_int(const Value& v) {
  if (v.kind == Value::Kind::Bool) return v.b;
  return v.i;
}

}  // namespace

[[noreturn]] void undefined_error(const Value& v) {
  fail("UndefinedError", v.undefined_hint.empty() ? "value is undefined" : v.undefined_hint);
}

void Interpreter::step(int64_t n) {
  // Saturating: a caller may ask for an enormous amount of work at once.
  if (n < 0 || n > limits_.max_steps - steps_) steps_ = limits_.max_steps + 1;
  else steps_ += n;
  if (steps_ > limits_.max_steps)
    fail("LimitError", "the template ran past " + std::to_string(limits_.max_steps) + " steps");
}

void Interpreter::check_size(size_t bytes) const {
  if (bytes > limits_.max_output)
    fail("LimitError", "a string or the output would pass " + std::to_string(limits_.max_output) + " bytes");
}

void Interpreter::write(const std::string& text) {
  check_size(out_->size() + text.size());
  *out_ += text;
}

std::string Interpreter::render(const Body& body, const std::shared_ptr<Dict>& context) {
  globals_ = new_scope(nullptr);
  add_globals(globals_->vars);
  auto top = new_scope(globals_);
  for (const auto& [k, v] : context->entries)
    if (k.is_string()) top->vars[k.str()] = v;
  std::string out;
  out_ = &out;
  try {
    exec_body(body, top);
  } catch (...) {
    release();
    throw;
  }
  release();
  return out;
}

Interpreter::ScopePtr Interpreter::new_scope(ScopePtr parent) {
  auto s = std::make_shared<Scope>();
  s->parent = std::move(parent);
  scopes_.push_back(s);
  return s;
}

void Interpreter::track(const std::shared_ptr<Dict>& mutable_dict) { mutables_.push_back(mutable_dict); }

// Values can form cycles only through what changes after it is made: scopes (a macro
// keeps the scope it was defined in, which holds the macro), namespaces and loop.changed's
// memory. Emptying them all at the end frees every cycle a template made.
void Interpreter::release() {
  out_ = nullptr;
  for (const std::weak_ptr<Scope>& w : scopes_) {
    if (ScopePtr s = w.lock()) {
      s->vars.clear();
      s->parent.reset();
    }
  }
  for (const std::weak_ptr<Dict>& w : mutables_) {
    if (std::shared_ptr<Dict> d = w.lock()) d->entries.clear();
  }
  scopes_.clear();
  mutables_.clear();
  globals_.reset();
}

std::string Interpreter::capture(const Body& body, const ScopePtr& scope) {
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  try {
    exec_body(body, scope);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buf;
}

Value Interpreter::lookup(const std::string& name, const ScopePtr& scope) const {
  for (const Scope* s = scope.get(); s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return it->second;
  }
  return Value::undefined("'" + name + "' is undefined");
}

// ---- statements -----------------------------------------------------------------------

Interpreter::Flow Interpreter::exec_body(const Body& body, const ScopePtr& scope) {
  for (const StmtPtr& s : body) {
    const Flow f = exec(*s, scope);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, const ScopePtr& scope) {
  step();
  return at_position(s.line, s.column, [&]() -> Flow {
    switch (s.kind) {
      case Stmt::Kind::Text: write(s.text); return Flow::Normal;
      case Stmt::Kind::Output: write(to_str(eval(*s.expr, scope))); return Flow::Normal;
      case Stmt::Kind::If:
        for (const auto& [cond, body] : s.branches)
          if (truthy(eval(*cond, scope))) return exec_body(body, scope);
        return exec_body(s.else_body, scope);
      case Stmt::Kind::For: {
        DepthScope depth(*this);
        exec_for(s, scope, eval(*s.expr, scope), 0);
        return Flow::Normal;
      }
      case Stmt::Kind::Set: assign(s.target, eval(*s.expr, scope), scope); return Flow::Normal;
      case Stmt::Kind::SetBlock: {
        DepthScope depth(*this);
        Value v = Value::string(capture(s.body, scope));
        for (const ExprPtr& f : s.filters) {
          Args args = eval_args(*f, 1, scope);
          v = apply_filter(f->name, v, args);
        }
        assign(s.target, v, scope);
        return Flow::Normal;
      }
      case Stmt::Kind::Macro: scope->vars[s.text] = make_macro(s, scope, s.text); return Flow::Normal;
      case Stmt::Kind::CallBlock: {
        const Value caller = make_macro(s, scope, "caller");
        const Expr& call = *s.expr;
        Value callee = eval(*call.items[0], scope);
        Args args = eval_args(call, 1, scope);
        args.keyword.emplace_back("caller", caller);
        write(to_str(this->call(callee, args)));
        return Flow::Normal;
      }
      case Stmt::Kind::FilterBlock: {
        DepthScope depth(*this);
        Value v = Value::string(capture(s.body, scope));
        for (const ExprPtr& f : s.filters) {
          Args args = eval_args(*f, 1, scope);
          v = apply_filter(f->name, v, args);
        }
        write(to_str(v));
        return Flow::Normal;
      }
      case Stmt::Kind::With: {
        DepthScope depth(*this);
        auto inner = new_scope(scope);
        for (const auto& [target, expr] : s.assignments) assign(target, eval(*expr, scope), inner);
        return exec_body(s.body, inner);
      }
      case Stmt::Kind::Generation: {
        DepthScope depth(*this);
        return exec_body(s.body, scope);
      }
      case Stmt::Kind::Break: return Flow::Break;
      case Stmt::Kind::Continue: return Flow::Continue;
    }
    return Flow::Normal;
  });
}

void Interpreter::assign(const Target& target, const Value& value, const ScopePtr& scope) {
  if (!target.attr.empty()) {
    Value ns = lookup(target.names[0], scope);
    if (ns.kind != Value::Kind::Namespace)
      fail("TemplateRuntimeError", "cannot assign attribute on non-namespace object");
    ns.dict->set(Value::string(target.attr), value);
    return;
  }
  if (target.names.size() == 1) {
    scope->vars[target.names[0]] = value;
    return;
  }
  Items items = iterate(value);
  if (items.size() != target.names.size())
    fail("ValueError", "cannot unpack " + std::to_string(items.size()) + " values into " +
                           std::to_string(target.names.size()) + " names");
  for (size_t i = 0; i < items.size(); ++i) scope->vars[target.names[i]] = items[i];
}

void Interpreter::exec_for(const Stmt& s, const ScopePtr& scope, const Value& iterable, int depth) {
  if (iterable.is_none()) type_error("'NoneType' object is not iterable");
  Items all = iterate(iterable);
  auto inner = new_scope(scope);
  Items items;
  if (s.cond) {
    for (const Value& item : all) {
      step();
      assign(s.target, item, inner);
      if (truthy(eval(*s.cond, inner))) items.push_back(item);
    }
  } else {
    items = std::move(all);
  }
  if (items.empty()) {
    exec_body(s.else_body, scope);
    return;
  }
  const int64_t n = int64_t(items.size());
  auto last_changed = std::make_shared<Dict>();  // its one entry: the last arguments
  track(last_changed);
  for (int64_t i = 0; i < n; ++i) {
    step();
    assign(s.target, items[size_t(i)], inner);
    auto loop = std::make_shared<Dict>();
    auto put = [&](const char* k, Value v) { loop->entries.emplace_back(Value::string(k), std::move(v)); };
    put("index", Value::integer(i + 1));
    put("index0", Value::integer(i));
    put("revindex", Value::integer(n - i));
    put("revindex0", Value::integer(n - i - 1));
    put("first", Value::boolean(i == 0));
    put("last", Value::boolean(i == n - 1));
    put("length", Value::integer(n));
    put("depth", Value::integer(depth + 1));
    put("depth0", Value::integer(depth));
    put("previtem", i > 0 ? items[size_t(i - 1)] : Value::undefined("there is no previous item"));
    put("nextitem", i + 1 < n ? items[size_t(i + 1)] : Value::undefined("there is no next item"));
    auto cycle = std::make_shared<Callable>();
    cycle->name = "cycle";
    cycle->call = [i](Interpreter&, Args& a) -> Value {
      if (a.positional.empty()) type_error("no items for cycling given");
      return a.positional[size_t(i) % a.positional.size()];
    };
    put("cycle", Value::callable(cycle));
    auto changed = std::make_shared<Callable>();
    changed->name = "changed";
    changed->call = [last_changed](Interpreter&, Args& a) -> Value {
      const Value now = Value::make_list(a.positional);
      const Value* last = last_changed->find(std::string_view("last"));
      if (last && equal(*last, now)) return Value::boolean(false);
      last_changed->set(Value::string("last"), now);
      return Value::boolean(true);
    };
    put("changed", Value::callable(changed));
    Value loop_value = Value::make_dict(loop);
    if (s.recursive) {
      auto again = std::make_shared<Callable>();
      again->name = "loop";
      again->call = [this, &s, scope, depth](Interpreter&, Args& a) -> Value {
        if (a.positional.size() != 1) type_error("loop() takes exactly one argument");
        DepthScope guard(*this);
        std::string buf;
        std::string* saved = out_;
        out_ = &buf;
        try {
          exec_for(s, scope, a.positional[0], depth + 1);
        } catch (...) {
          out_ = saved;
          throw;
        }
        out_ = saved;
        return Value::string(std::move(buf));
      };
      loop_value.fn = again;
    }
    inner->vars["loop"] = loop_value;
    if (exec_body(s.body, inner) == Flow::Break) break;
  }
}

Value Interpreter::make_macro(const Stmt& s, const ScopePtr& scope, const std::string& name) {
  auto fn = std::make_shared<Callable>();
  fn->name = name;
  const Stmt* def = &s;
  fn->call = [this, def, scope, name](Interpreter&, Args& a) -> Value {
    DepthScope depth(*this);
    auto frame = new_scope(scope);
    const auto& params = def->params;
    Items varargs;
    for (size_t i = 0; i < a.positional.size(); ++i) {
      if (i < params.size()) frame->vars[params[i].first] = a.positional[i];
      else varargs.push_back(a.positional[i]);
    }
    auto kwargs = std::make_shared<Dict>();
    for (auto& [k, v] : a.keyword) {
      bool is_param = k == "caller";
      for (const auto& p : params) is_param = is_param || p.first == k;
      if (is_param) frame->vars[k] = v;
      else kwargs->set(Value::string(k), v);
    }
    for (size_t i = 0; i < params.size(); ++i) {
      if (frame->vars.count(params[i].first)) continue;
      frame->vars[params[i].first] =
          params[i].second ? eval(*params[i].second, frame)
                           : Value::undefined("parameter '" + params[i].first + "' was not provided");
    }
    frame->vars["varargs"] = Value::make_list(std::move(varargs), true);
    frame->vars["kwargs"] = Value::make_dict(kwargs);
    return Value::string(capture(def->body, frame));
  };
  return Value::callable(fn);
}

// ---- expressions ------------------------------------------------------------------------

Args Interpreter::eval_args(const Expr& e, size_t first, const ScopePtr& scope) {
  Args args;
  for (size_t i = first; i < e.items.size(); ++i) args.positional.push_back(eval(*e.items[i], scope));
  if (e.star)
    for (Value& v : iterate(eval(*e.star, scope))) args.positional.push_back(std::move(v));
  for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, eval(*v, scope));
  if (e.dstar) {
    const Value d = eval(*e.dstar, scope);
    if (!d.is_dict()) type_error("argument after ** must be a mapping, not " + type_name(d));
    for (const auto& [k, v] : d.dict->entries) args.keyword.emplace_back(to_str(k), v);
  }
  return args;
}

Value Interpreter::call(const Value& callee, Args& args) {
  if (callee.kind == Value::Kind::Callable) return callee.fn->call(*this, args);
  if (callee.fn) return callee.fn->call(*this, args);  // a recursive loop object
  if (callee.is_undefined()) undefined_error(callee);
  type_error("'" + type_name(callee) + "' object is not callable");
}

Value Interpreter::eval(const Expr& e, const ScopePtr& scope) {
  return at_position(e.line, e.column, [&]() -> Value {
    switch (e.kind) {
      case Expr::Kind::Literal: return e.literal;
      case Expr::Kind::Name: return lookup(e.name, scope);
      case Expr::Kind::List:
      case Expr::Kind::Tuple: {
        Items items;
        for (const ExprPtr& x : e.items) items.push_back(eval(*x, scope));
        return Value::make_list(std::move(items), e.kind == Expr::Kind::Tuple);
      }
      case Expr::Kind::Dict: {
        auto d = std::make_shared<Dict>();
        for (size_t i = 0; i + 1 < e.items.size(); i += 2) d->set(eval(*e.items[i], scope), eval(*e.items[i + 1], scope));
        return Value::make_dict(d);
      }
      case Expr::Kind::Attr: return getattr(eval(*e.items[0], scope), e.name);
      case Expr::Kind::Item: return getitem(eval(*e.items[0], scope), eval(*e.items[1], scope));
      case Expr::Kind::Slice: {
        Args a;
        a.positional.push_back(eval(*e.items[0], scope));
        for (size_t i = 1; i <= 3; ++i) a.positional.push_back(e.items[i] ? eval(*e.items[i], scope) : Value::none());
        return apply_filter("__slice__", a.positional[0], a);
      }
      case Expr::Kind::Call: return eval_call(e, scope);
      case Expr::Kind::Filter: {
        Value input = eval(*e.items[0], scope);
        Args args = eval_args(e, 1, scope);
        return apply_filter(e.name, input, args);
      }
      case Expr::Kind::Test: {
        Value input = eval(*e.items[0], scope);
        Args args = eval_args(e, 1, scope);
        return Value::boolean(apply_test(e.name, input, args) != e.negated);
      }
      case Expr::Kind::Unary: {
        const Value v = eval(*e.items[0], scope);
        if (e.name == "not") return Value::boolean(!truthy(v));
        if (v.is_undefined()) undefined_error(v);
        if (!v.is_number()) type_error("bad operand type for unary " + e.name + ": '" + type_name(v) + "'");
        if (e.name == "+") return v.kind == Value::Kind::Float ? v : Value::integer(as_int(v));
        if (v.kind == Value::Kind::Float) return Value::number(-v.f);
        if (as_int(v) == std::numeric_limits<int64_t>::min()) return Value::number(-double(as_int(v)));
        return Value::integer(-as_int(v));
      }
      case Expr::Kind::Binary: return eval_binary(e, scope);
      case Expr::Kind::Compare: return eval_compare(e, scope);
      case Expr::Kind::Cond:
        if (truthy(eval(*e.items[1], scope))) return eval(*e.items[0], scope);
        return e.items[2] ? eval(*e.items[2], scope) : Value::undefined("the condition was false and there is no else");
    }
    return Value::undefined();
  });
}

Value Interpreter::eval_call(const Expr& e, const ScopePtr& scope) {
  const Value callee = eval(*e.items[0], scope);
  Args args = eval_args(e, 1, scope);
  return call(callee, args);
}

namespace {

Value arith(const std::string& op, const Value& a, const Value& b, Interpreter& in) {
  using K = Value::Kind;
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  auto unsupported = [&]() -> Value {
    type_error("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
  };
  if (a.is_number() && b.is_number()) {
    const bool floats = a.kind == K::Float || b.kind == K::Float;
    if (op == "/") {
      if (b.as_double() == 0) fail("ZeroDivisionError", "division by zero");
      return Value::number(a.as_double() / b.as_double());
    }
    if (!floats) {
      const int64_t x = as_int(a), y = as_int(b);
      int64_t r = 0;
      if (op == "+" && !__builtin_add_overflow(x, y, &r)) return Value::integer(r);
      if (op == "-" && !__builtin_sub_overflow(x, y, &r)) return Value::integer(r);
      if (op == "*" && !__builtin_mul_overflow(x, y, &r)) return Value::integer(r);
      if (op == "//" || op == "%") {
        if (y == 0) fail("ZeroDivisionError", "integer division or modulo by zero");
        if (x == std::numeric_limits<int64_t>::min() && y == -1) return Value::number(-double(x));
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          --q;
          m += y;
        }
        return Value::integer(op == "//" ? q : m);
      }
      if (op == "**" && y >= 0) {
        // By squaring (O(log y) even for 1 ** 10**13); past int64 a float, where Python
        // would keep a big int.
        int64_t result = 1, base = x, e = y;
        bool overflow = false;
        while (e > 0 && !overflow) {
          if (e & 1) overflow = __builtin_mul_overflow(result, base, &result);
          e >>= 1;
          if (e > 0 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
        }
        if (!overflow) return Value::integer(result);
        return Value::number(std::pow(double(x), double(y)));
      }
    }
    const double x = a.as_double(), y = b.as_double();
    if (op == "+") return Value::number(x + y);
    if (op == "-") return Value::number(x - y);
    if (op == "*") return Value::number(x * y);
    if (op == "**") return Value::number(std::pow(x, y));
    if (op == "//" || op == "%") {
      if (y == 0) fail("ZeroDivisionError", "float division by zero");
      const double m = std::fmod(x, y);
      const double mod = (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
      return Value::number(op == "%" ? mod : std::floor((x - mod) / y + 0.5));
    }
    return unsupported();
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      in.check_size(a.str().size() + b.str().size());
      if (a.markup == b.markup) {
        Value r = Value::string(a.str() + b.str());
        r.markup = a.markup;
        return r;
      }
      // Markup + str escapes the str (markupsafe's Markup.__add__ / __radd__).
      Value r = Value::string(html_escape(a.str(), a.markup) + html_escape(b.str(), b.markup));
      r.markup = true;
      return r;
    }
    if (a.is_list() && b.is_list() && a.is_tuple == b.is_tuple) {
      Items items = *a.list;
      items.insert(items.end(), b.list->begin(), b.list->end());
      in.step(int64_t(items.size()));
      return Value::make_list(std::move(items), a.is_tuple);
    }
  }
  if (op == "*") {
    const Value& seq = a.is_number() ? b : a;
    const Value& count = a.is_number() ? a : b;
    if (count.kind != K::Int && count.kind != K::Bool) return unsupported();
    const int64_t n = std::max<int64_t>(0, as_int(count));
    if (seq.is_string()) {
      const size_t len = seq.str().size();
      if (len != 0 && uint64_t(n) > (uint64_t{1} << 40) / len) in.check_size(std::numeric_limits<size_t>::max());
      in.check_size(size_t(n) * len);
      if (len == 0) return Value::string("");  // 10**17 copies of nothing: nothing, at once
      std::string out;
      for (int64_t k = 0; k < n; ++k) out += seq.str();
      return Value::string(std::move(out));
    }
    if (seq.is_list()) {
      const int64_t len = int64_t(seq.list->size());
      if (len != 0 && n > (int64_t{1} << 40) / len) in.step(std::numeric_limits<int64_t>::max() / 2);
      in.step(n * len);
      if (len == 0) return Value::make_list({}, seq.is_tuple);
      Items items;
      for (int64_t k = 0; k < n; ++k) items.insert(items.end(), seq.list->begin(), seq.list->end());
      return Value::make_list(std::move(items), seq.is_tuple);
    }
  }
  return unsupported();
}

}  // namespace

Value Interpreter::eval_binary(const Expr& e, const ScopePtr& scope) {
  const std::string& op = e.name;
  if (op == "and") {
    Value l = eval(*e.items[0], scope);
    return truthy(l) ? eval(*e.items[1], scope) : l;
  }
  if (op == "or") {
    Value l = eval(*e.items[0], scope);
    return truthy(l) ? l : eval(*e.items[1], scope);
  }
  const Value l = eval(*e.items[0], scope);
  const Value r = eval(*e.items[1], scope);
  if (op == "~") {
    std::string a = to_str(l), b = to_str(r);
    check_size(a.size() + b.size());
    return Value::string(a + b);
  }
  return arith(op, l, r, *this);
}

bool less(const Value& a, const Value& b) {
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  if (a.is_number() && b.is_number()) {
    if (a.kind != Value::Kind::Float && b.kind != Value::Kind::Float) return as_int(a) < as_int(b);
    return a.as_double() < b.as_double();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  if (a.is_list() && b.is_list()) {
    const Items &x = *a.list, &y = *b.list;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equal(x[i], y[i])) continue;
      return less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  type_error("'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Value::Kind::String:
      if (!item.is_string()) type_error("'in <string>' requires string as left operand, not " + type_name(item));
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : *container.list)
        if (equal(v, item)) return true;
      return false;
    case Value::Kind::Dict:
    case Value::Kind::Namespace: return container.dict->find(item) != nullptr;
    case Value::Kind::Undefined: return false;
    default: type_error("argument of type '" + type_name(container) + "' is not iterable");
  }
}

Value Interpreter::eval_compare(const Expr& e, const ScopePtr& scope) {
  Value left = eval(*e.items[0], scope);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.items[i + 1], scope);
    const std::string& op = e.ops[i];
    bool ok;
    if (op == "==") ok = equal(left, right);
    else if (op == "!=") ok = !equal(left, right);
    else if (op == "<") ok = less(left, right);
    else if (op == ">") ok = less(right, left);
    else if (op == "<=") ok = less(left, right) || equal(left, right);
    else if (op == ">=") ok = less(right, left) || equal(left, right);
    else if (op == "in") ok = contains(right, left);
    else ok = !contains(right, left);
    if (!ok) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

// ---- attribute and item access ------------------------------------------------------------

Value Interpreter::getattr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) undefined_error(obj);
  if (!name.empty() && name[0] == '_')
    fail("SecurityError", "access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe.");
  if (obj.kind == Value::Kind::Dict || obj.kind == Value::Kind::Namespace) {
    if (obj.kind == Value::Kind::Dict && !obj.fn) {
      Value m = bound_method(obj, name);
      if (!m.is_undefined()) return m;
    }
    if (const Value* v = obj.dict->find(name)) return *v;
    return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + name + "'");
  }
  if (obj.is_string() || obj.is_list()) {
    Value m = bound_method(obj, name);
    if (!m.is_undefined()) return m;
  }
  return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + name + "'");
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) undefined_error(obj);
  switch (obj.kind) {
    case Value::Kind::Dict:
    case Value::Kind::Namespace:
      if (const Value* v = obj.dict->find(key)) return *v;
      if (key.is_string() && obj.kind == Value::Kind::Dict) {
        Value m = bound_method(obj, key.str());
        if (!m.is_undefined()) return m;
      }
      return Value::undefined("'" + type_name(obj) + " object' has no attribute " + to_repr(key));
    case Value::Kind::List:
    case Value::Kind::String: {
      if (key.kind == Value::Kind::Int || key.kind == Value::Kind::Bool) {
        int64_t i = as_int(key);
        if (obj.is_list()) {
          const int64_t n = int64_t(obj.list->size());
          if (i < 0) i += n;
          if (i < 0 || i >= n) return Value::undefined(type_name(obj) + " object has no element " + std::to_string(as_int(key)));
          return (*obj.list)[size_t(i)];
        }
        step(int64_t(obj.str().size() / 64));  // a walk over the whole string
        const std::vector<std::string> chars = utf8_chars(obj.str());
        const int64_t n = int64_t(chars.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::undefined("str object has no element " + std::to_string(as_int(key)));
        return Value::string(chars[size_t(i)]);
      }
      if (key.is_string()) return getattr(obj, key.str());
      return Value::undefined(type_name(obj) + " object has no element " + to_repr(key));
    }
    default:
      if (key.is_string()) return getattr(obj, key.str());
      return Value::undefined("'" + type_name(obj) + " object' has no attribute " + to_repr(key));
  }
}

Items iterate(const Value& v) {
  switch (v.kind) {
    case Value::Kind::List: return *v.list;
    case Value::Kind::Dict: {
      Items keys;
      for (const auto& [k, x] : v.dict->entries) keys.push_back(k);
      return keys;
    }
    case Value::Kind::String: {
      Items chars;
      for (std::string& c : utf8_chars(v.str())) chars.push_back(Value::string(std::move(c)));
      return chars;
    }
    case Value::Kind::Undefined: return {};
    default: type_error("'" + type_name(v) + "' object is not iterable");
  }
}

}  // namespace tessera::jinja
