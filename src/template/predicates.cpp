// jinja2's builtin tests (`x is defined`, `x is equalto 3`, ...), as jinja2 3.1 defines them.
#include <unordered_map>

#include "template/builtins.h"

namespace tessera::jinja {
namespace {

using K = Value::Kind;
using TestFn = bool (*)(Interpreter&, const Value&, Args&);

const Value& other(const Args& a, const char* what) {
  if (a.positional.empty()) type_error(std::string("test '") + what + "' takes one argument");
  return a.positional[0];
}

bool has_lower(const std::string& s, bool want_lower) {
  bool cased = false;
  for (unsigned char c : s) {
    if (std::islower(c)) {
      if (!want_lower) return false;
      cased = true;
    } else if (std::isupper(c)) {
      if (want_lower) return false;
      cased = true;
    }
  }
  return cased;
}

int64_t integer_of(const Value& v) {
  if (v.kind == K::Bool) return v.b;
  if (v.kind == K::Int) return v.i;
  if (v.kind == K::Float) return saturate_to_int(v.f);
  type_error("an integer is required, got " + type_name(v));
}

const std::unordered_map<std::string, TestFn>& test_table() {
  static const std::unordered_map<std::string, TestFn> table = {
      {"defined", [](Interpreter&, const Value& v, Args&) { return !v.is_undefined(); }},
      {"undefined", [](Interpreter&, const Value& v, Args&) { return v.is_undefined(); }},
      {"none", [](Interpreter&, const Value& v, Args&) { return v.is_none(); }},
      {"boolean", [](Interpreter&, const Value& v, Args&) { return v.kind == K::Bool; }},
      {"true", [](Interpreter&, const Value& v, Args&) { return v.kind == K::Bool && v.b; }},
      {"false", [](Interpreter&, const Value& v, Args&) { return v.kind == K::Bool && !v.b; }},
      {"integer", [](Interpreter&, const Value& v, Args&) { return v.kind == K::Int; }},
      {"float", [](Interpreter&, const Value& v, Args&) { return v.kind == K::Float; }},
      {"number", [](Interpreter&, const Value& v, Args&) { return v.is_number(); }},
      {"string", [](Interpreter&, const Value& v, Args&) { return v.is_string(); }},
      {"mapping", [](Interpreter&, const Value& v, Args&) { return v.kind == K::Dict; }},
      {"sequence", [](Interpreter&, const Value& v, Args&) {
         return v.is_string() || v.is_list() || v.kind == K::Dict || v.is_undefined();
       }},
      {"iterable", [](Interpreter&, const Value& v, Args&) {
         return v.is_string() || v.is_list() || v.kind == K::Dict || v.is_undefined();
       }},
      {"callable", [](Interpreter&, const Value& v, Args&) { return v.kind == K::Callable || v.fn != nullptr; }},
      {"sameas", [](Interpreter&, const Value& v, Args& a) {
         const Value& o = other(a, "sameas");
         if (v.kind != o.kind) return false;
         if (v.is_list()) return v.list == o.list;
         if (v.kind == K::Dict || v.kind == K::Namespace) return v.dict == o.dict;
         if (v.kind == K::Callable) return v.fn == o.fn;
         return equal(v, o);  // None, bools, small ints and interned strings are singletons enough
       }},
      {"equalto", [](Interpreter&, const Value& v, Args& a) { return equal(v, other(a, "equalto")); }},
      {"eq", [](Interpreter&, const Value& v, Args& a) { return equal(v, other(a, "eq")); }},
      {"==", [](Interpreter&, const Value& v, Args& a) { return equal(v, other(a, "==")); }},
      {"ne", [](Interpreter&, const Value& v, Args& a) { return !equal(v, other(a, "ne")); }},
      {"!=", [](Interpreter&, const Value& v, Args& a) { return !equal(v, other(a, "!=")); }},
      {"lt", [](Interpreter&, const Value& v, Args& a) { return less(v, other(a, "lt")); }},
      {"lessthan", [](Interpreter&, const Value& v, Args& a) { return less(v, other(a, "lessthan")); }},
      {"<", [](Interpreter&, const Value& v, Args& a) { return less(v, other(a, "<")); }},
      {"gt", [](Interpreter&, const Value& v, Args& a) { return less(other(a, "gt"), v); }},
      {"greaterthan", [](Interpreter&, const Value& v, Args& a) { return less(other(a, "greaterthan"), v); }},
      {">", [](Interpreter&, const Value& v, Args& a) { return less(other(a, ">"), v); }},
      {"le", [](Interpreter&, const Value& v, Args& a) { return !less(other(a, "le"), v); }},
      {"<=", [](Interpreter&, const Value& v, Args& a) { return !less(other(a, "<="), v); }},
      {"ge", [](Interpreter&, const Value& v, Args& a) { return !less(v, other(a, "ge")); }},
      {">=", [](Interpreter&, const Value& v, Args& a) { return !less(v, other(a, ">=")); }},
      {"in", [](Interpreter&, const Value& v, Args& a) { return contains(other(a, "in"), v); }},
      {"odd", [](Interpreter&, const Value& v, Args&) { return integer_of(v) % 2 != 0; }},
      {"even", [](Interpreter&, const Value& v, Args&) { return integer_of(v) % 2 == 0; }},
      {"divisibleby", [](Interpreter&, const Value& v, Args& a) {
         const int64_t d = integer_of(other(a, "divisibleby"));
         if (d == 0) fail("ZeroDivisionError", "integer division or modulo by zero");
         return integer_of(v) % d == 0;
       }},
      {"lower", [](Interpreter&, const Value& v, Args&) { return has_lower(to_str(v), true); }},
      {"upper", [](Interpreter&, const Value& v, Args&) { return has_lower(to_str(v), false); }},
      {"escaped", [](Interpreter&, const Value&, Args&) { return false; }},
  };
  return table;
}

}  // namespace

bool Interpreter::apply_test(const std::string& name, const Value& input, Args& args) {
  const auto& table = test_table();
  auto it = table.find(name);
  if (it == table.end()) fail("TemplateAssertionError", "No test named '" + name + "'.");
  return it->second(*this, input, args);
}

}  // namespace tessera::jinja
