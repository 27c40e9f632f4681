// The values a Jinja template computes with, as Python sees them: None, bool, int, float,
// str, list, tuple, dict (insertion-ordered), callables (macros, builtins, bound methods),
// jinja2's namespace(), and Undefined (what a missing variable or key is).
//
// Containers are shared by reference, as Python's are: a list read from a dict and the
// dict's own entry are the same object. Templates cannot change them (the sandbox forbids
// list.append and the like); only namespace attributes are assigned after creation.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::jinja {

struct Value;
struct Dict;
struct Callable;
class Interpreter;

using Items = std::vector<Value>;

/// Arguments of a call: positional, then keyword (in the order written).
struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct Value {
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Callable, Namespace };

  Kind kind = Kind::Undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::shared_ptr<const std::string> s;  // String
  std::shared_ptr<Items> list;            // List (tuple when is_tuple)
  bool is_tuple = false;
  bool markup = false;                   // String: jinja2's Markup (from `safe`, `escape`)
  uint16_t nesting = 0;                  // List, Dict: containers nested inside, 1 + the deepest
  std::shared_ptr<Dict> dict;            // Dict, Namespace
  std::shared_ptr<Callable> fn;          // Callable
  std::string undefined_hint;            // Undefined: what was missing, for the error

  static Value undefined(std::string hint = {});
  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value number(double v);
  static Value string(std::string v);
  /// Containers nest at most kMaxNesting deep (a LimitError past it): a template could
  /// otherwise build a list a million levels deep in a loop, which no recursion survives.
  static constexpr int kMaxNesting = 512;
  static Value make_list(Items items, bool tuple = false);
  static Value make_dict(std::shared_ptr<Dict> d);
  static Value make_namespace(std::shared_ptr<Dict> d);
  static Value callable(std::shared_ptr<Callable> c);

  bool is_undefined() const { return kind == Kind::Undefined; }
  bool is_none() const { return kind == Kind::None; }
  bool is_string() const { return kind == Kind::String; }
  bool is_int() const { return kind == Kind::Int; }
  /// int, float or bool (Python's numbers.Number: bool is an int).
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  bool is_list() const { return kind == Kind::List; }
  bool is_dict() const { return kind == Kind::Dict; }
  const std::string& str() const { return *s; }
  /// The number as a double (bool, int, float).
  double as_double() const;
};

/// A dict: keys in insertion order. Keys are values (Python allows any hashable one).
struct Dict {
  std::vector<std::pair<Value, Value>> entries;

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  /// Sets `key`, keeping its place when it exists.
  void set(const Value& key, Value value);
};

/// Something a template can call: a builtin, a bound method, a macro, `caller`.
struct Callable {
  std::string name;
  std::function<Value(Interpreter&, Args&)> call;
};

/// A float truncated toward zero as an int64, saturating at its ends (NaN: 0): C++'s
/// conversion is undefined past them.
int64_t saturate_to_int(double f);
/// Whether int(f) fits an int64 exactly as Python's int(f) gives it.
bool fits_int(double f);

/// Python's bool(v).
bool truthy(const Value& v);
/// Python's type name of v ("str", "int", "dict", "list", "NoneType", "Undefined"...).
std::string type_name(const Value& v);
/// Python's `a == b` (1 == 1.0 == True; lists and dicts deeply; Undefined equals Undefined).
/// Values nested past 512 containers (a template can build them in a loop) are a
/// LimitError for ==, str() and repr(), not a stack overflow.
bool equal(const Value& a, const Value& b);
bool equal_at(const Value& a, const Value& b, int depth);
/// Python's str(v) (what `{{ v }}` prints): None -> "None", Undefined -> "", floats as
/// repr, lists and dicts with repr of their items.
std::string to_str(const Value& v);
/// Python's repr(v).
std::string to_repr(const Value& v);
std::string repr_at(const Value& v, int depth);
/// Python's repr of a float ("1.0", "0.1", "1e-05", "inf").
std::string float_repr(double v);

/// The code point at s[i] (advancing i), or 0xFFFFFFFF for an invalid byte (i advances 1).
uint32_t next_codepoint(const std::string& s, size_t& i);
/// `cp` appended to `out` as UTF-8.
void append_codepoint(std::string& out, uint32_t cp);

/// The number of code points of UTF-8 text (invalid bytes count one each).
size_t utf8_length(std::string_view s);
/// UTF-8 text split into code points, each as its bytes.
std::vector<std::string> utf8_chars(std::string_view s);

}  // namespace tessera::jinja
