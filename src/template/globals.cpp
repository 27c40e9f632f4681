// The functions every template can call: jinja2's range, namespace, dict, joiner, cycler
// (range capped as jinja2's sandbox caps it), and transformers' raise_exception and
// strftime_now.
#include <cmath>
#include <ctime>

#include "template/builtins.h"

namespace tessera::jinja {
namespace {

constexpr int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE

int64_t int_of(const Value& v) {
  if (v.kind == Value::Kind::Int) return v.i;
  if (v.kind == Value::Kind::Bool) return v.b;
  type_error("'" + type_name(v) + "' object cannot be interpreted as an integer");
}

Value make(const char* name, std::function<Value(Interpreter&, Args&)> fn) {
  auto c = std::make_shared<Callable>();
  c->name = name;
  c->call = std::move(fn);
  return Value::callable(c);
}

Value range(Interpreter& in, Args& a) {
  int64_t start = 0, stop = 0, step = 1;
  if (a.positional.size() == 1) {
    stop = int_of(a.positional[0]);
  } else if (a.positional.size() == 2 || a.positional.size() == 3) {
    start = int_of(a.positional[0]);
    stop = int_of(a.positional[1]);
    if (a.positional.size() == 3) step = int_of(a.positional[2]);
  } else {
    type_error("range expected 1 to 3 arguments, got " + std::to_string(a.positional.size()));
  }
  if (step == 0) fail("ValueError", "range() arg 3 must not be zero");
  // Python's len(range(start, stop, step)), exactly: the distance fits a uint64.
  const bool up = step > 0;
  const bool empty = up ? stop <= start : stop >= start;
  const uint64_t span = empty ? 0 : up ? uint64_t(stop) - uint64_t(start) : uint64_t(start) - uint64_t(stop);
  const uint64_t stride = up ? uint64_t(step) : 0 - uint64_t(step);
  const uint64_t count = span == 0 ? 0 : (span - 1) / stride + 1;
  if (count > uint64_t(kMaxRange))
    fail("OverflowError", "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  Items items;
  // Modular uint64 arithmetic: every value lies between start and stop, so it is exact.
  for (uint64_t k = 0; k < count; ++k) items.push_back(Value::integer(int64_t(uint64_t(start) + k * uint64_t(step))));
  in.step(int64_t(items.size()));
  return Value::make_list(std::move(items));
}

Value dict_of(Interpreter& in, Args& a, bool ns) {
  auto d = std::make_shared<Dict>();
  for (const Value& p : a.positional) {
    if (!p.is_dict()) type_error("expected a mapping, got " + type_name(p));
    for (const auto& [k, v] : p.dict->entries) d->set(k, v);
  }
  for (auto& [k, v] : a.keyword) d->set(Value::string(k), v);
  if (ns) in.track(d);
  return ns ? Value::make_namespace(d) : Value::make_dict(d);
}

}  // namespace

void add_globals(std::unordered_map<std::string, Value>& vars) {
  vars["range"] = make("range", range);
  vars["namespace"] = make("namespace", [](Interpreter& in, Args& a) { return dict_of(in, a, true); });
  vars["dict"] = make("dict", [](Interpreter& in, Args& a) { return dict_of(in, a, false); });
  vars["raise_exception"] = make("raise_exception", [](Interpreter&, Args& a) -> Value {
    fail("TemplateError", a.positional.empty() ? std::string("raise_exception() called") : to_str(a.positional[0]));
  });
  vars["strftime_now"] = make("strftime_now", [](Interpreter& in, Args& a) {
    const std::string fmt = to_str(arg(a, 0, "format"));
    if (fmt.size() > 1024) fail("ValueError", "strftime format too long");
    char buf[4096];
    const size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &in.now());
    return Value::string(std::string(buf, n));
  });
  vars["joiner"] = make("joiner", [](Interpreter&, Args& a) {
    const std::string sep = to_str(arg(a, 0, "sep", Value::string(", ")));
    auto used = std::make_shared<bool>(false);
    return make("joiner", [sep, used](Interpreter&, Args&) {
      if (!*used) {
        *used = true;
        return Value::string("");
      }
      return Value::string(sep);
    });
  });
}

}  // namespace tessera::jinja
