// The Jinja evaluator: runs a parsed template over a context, with Python jinja2's
// semantics (as transformers configures it: sandboxed and immutable, no autoescape), and
// with limits so that a hostile template cannot hang or exhaust memory.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "template/ast.h"
#include "template/value.h"

namespace tessera::jinja {

struct Limits {
  size_t max_output = size_t{1} << 24;   // bytes of output, and of any one string made
  int64_t max_steps = 20'000'000;        // statements, loop iterations and items filtered
  int max_depth = 200;                   // nested calls (macros, recursive loops) and blocks
};

class Interpreter {
 public:
  Interpreter(const Limits& limits, std::tm now) : limits_(limits), now_(now) {}

  /// Renders `body` with `context` as the template's variables (beside the globals).
  std::string render(const Body& body, const std::shared_ptr<Dict>& context);

  /// Calls a callable value (a builtin, method, macro).
  Value call(const Value& callee, Args& args);
  /// Applies filter `name` / test `name` (filters.cpp, tests.cpp).
  Value apply_filter(const std::string& name, const Value& input, Args& args);
  bool apply_test(const std::string& name, const Value& input, Args& args);
  /// `obj.name` and `obj[key]` as jinja2's sandbox resolves them.
  Value getattr(const Value& obj, const std::string& name);
  Value getitem(const Value& obj, const Value& key);

  /// One unit of work; past Limits::max_steps a LimitError.
  void step(int64_t n = 1);
  /// A string of `bytes` is about to be made; past Limits::max_output a LimitError.
  void check_size(size_t bytes) const;
  const std::tm& now() const { return now_; }
  /// A dict that changes after it is made (a namespace): emptied when the render ends,
  /// which frees the cycles a template may make through it.
  void track(const std::shared_ptr<Dict>& mutable_dict);

 private:
  struct Scope {
    std::unordered_map<std::string, Value> vars;
    std::shared_ptr<Scope> parent;
  };
  using ScopePtr = std::shared_ptr<Scope>;
  enum class Flow { Normal, Break, Continue };

  ScopePtr new_scope(ScopePtr parent);
  void release();
  Flow exec_body(const Body& body, const ScopePtr& scope);
  Flow exec(const Stmt& s, const ScopePtr& scope);
  void exec_for(const Stmt& s, const ScopePtr& scope, const Value& iterable, int depth);
  void assign(const Target& target, const Value& value, const ScopePtr& scope);
  Value make_macro(const Stmt& s, const ScopePtr& scope, const std::string& name);
  std::string capture(const Body& body, const ScopePtr& scope);
  void write(const std::string& text);

  Value eval(const Expr& e, const ScopePtr& scope);
  Value eval_binary(const Expr& e, const ScopePtr& scope);
  Value eval_compare(const Expr& e, const ScopePtr& scope);
  Value eval_call(const Expr& e, const ScopePtr& scope);
  Args eval_args(const Expr& e, size_t first, const ScopePtr& scope);
  Value lookup(const std::string& name, const ScopePtr& scope) const;

  Limits limits_;
  std::tm now_;
  ScopePtr globals_;
  std::vector<std::weak_ptr<Scope>> scopes_;
  std::vector<std::weak_ptr<Dict>> mutables_;
  std::string* out_ = nullptr;
  int64_t steps_ = 0;
  int depth_ = 0;
  friend struct DepthScope;
};

/// Items of an iterable as a `for` loop sees them: a list's items, a dict's keys, a
/// string's characters, nothing for Undefined. TypeError for anything else.
Items iterate(const Value& v);

/// `item in container` (substring, list item, dict key).
bool contains(const Value& container, const Value& item);

/// Python's `<` for the values comparisons accept (numbers, strings, lists); TypeError else.
bool less(const Value& a, const Value& b);

/// The method `name` of a str, list or dict as a callable bound to `self`; Undefined
/// when there is none (methods.cpp). SecurityError for the mutating ones the immutable
/// sandbox refuses (list.append, dict.update, ...).
Value bound_method(const Value& self, const std::string& name);

/// The globals every template sees: range, namespace, dict, raise_exception,
/// strftime_now, cycler, joiner (filters.cpp).
void add_globals(std::unordered_map<std::string, Value>& vars);

/// Python's json.dumps(v, ensure_ascii, indent, separators, sort_keys) (json.cpp).
struct JsonStyle {
  bool ensure_ascii = false;
  int indent = -1;  // < 0: none
  std::string indent_text;  // when the indent was given as a string
  std::string item_sep = ", ";
  std::string key_sep = ": ";
  bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonStyle& style, Interpreter& interp);

/// markupsafe's escape(): & < > " ' as entities; `already_markup` text is kept as it is.
std::string html_escape(const std::string& s, bool already_markup = false);

/// Throws UndefinedError for an operation on Undefined.
[[noreturn]] void undefined_error(const Value& v);

}  // namespace tessera::jinja
