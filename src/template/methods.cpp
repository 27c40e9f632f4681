// The methods of str, list and dict values that templates call (`s.strip()`,
// `d.get(k)`, `s.split(",")`), with Python's semantics. The immutable sandbox refuses the
// mutating ones (list.append, dict.update, ...) with a SecurityError when called.
#include <algorithm>
#include <charconv>
#include <unordered_set>

#include "template/builtins.h"

namespace tessera::jinja {
namespace {

using Method = Value (*)(Interpreter&, const Value& self, Args&);

std::string str_arg(const Args& a, size_t i, const char* name) {
  const Value v = arg(a, i, name);
  if (!v.is_string()) type_error(std::string("argument '") + name + "' must be str, not " + type_name(v));
  return v.str();
}

std::string chars_arg(const Args& a) {
  const Value v = arg(a, 0, "chars", Value::none());
  return v.is_string() ? v.str() : "";
}

Value split(const Value& self, Args& a, bool from_right) {
  const std::string& s = self.str();
  const Value sep_v = arg(a, 0, "sep", Value::none());
  const Value max_v = arg(a, 1, "maxsplit", Value::integer(-1));
  int64_t maxsplit = max_v.kind == Value::Kind::Int ? max_v.i : -1;
  Items parts;
  if (sep_v.is_none()) {
    // Runs of whitespace; no empty parts.
    std::vector<std::pair<size_t, size_t>> words;
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size()) break;
      size_t j = i;
      while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      words.emplace_back(i, j);
      i = j;
    }
    if (maxsplit < 0 || size_t(maxsplit) >= words.size()) {
      for (auto [b, e] : words) parts.push_back(Value::string(s.substr(b, e - b)));
      return Value::make_list(std::move(parts));
    }
    if (!from_right) {
      for (size_t k = 0; k < size_t(maxsplit); ++k) parts.push_back(Value::string(s.substr(words[k].first, words[k].second - words[k].first)));
      std::string rest = strip(s.substr(words[size_t(maxsplit)].first), "", false, true);
      parts.push_back(Value::string(rest));
    } else {
      const size_t keep = words.size() - size_t(maxsplit);
      parts.push_back(Value::string(strip(s.substr(0, words[keep - 1].second), "", true, false)));
      for (size_t k = keep; k < words.size(); ++k) parts.push_back(Value::string(s.substr(words[k].first, words[k].second - words[k].first)));
    }
    return Value::make_list(std::move(parts));
  }
  if (!sep_v.is_string()) type_error("must be str or None, not " + type_name(sep_v));
  const std::string& sep = sep_v.str();
  if (sep.empty()) fail("ValueError", "empty separator");
  std::vector<std::string> pieces;
  if (!from_right) {
    size_t pos = 0;
    for (size_t hit; maxsplit != 0 && (hit = s.find(sep, pos)) != std::string::npos; --maxsplit) {
      pieces.push_back(s.substr(pos, hit - pos));
      pos = hit + sep.size();
    }
    pieces.push_back(s.substr(pos));
  } else {
    size_t end = s.size();
    std::vector<std::string> rev;
    while (maxsplit != 0 && end >= sep.size()) {
      const size_t hit = s.rfind(sep, end - sep.size());
      if (hit == std::string::npos) break;
      rev.push_back(s.substr(hit + sep.size(), end - hit - sep.size()));
      end = hit;
      --maxsplit;
    }
    rev.push_back(s.substr(0, end));
    pieces.assign(rev.rbegin(), rev.rend());
  }
  for (std::string& p : pieces) parts.push_back(Value::string(std::move(p)));
  return Value::make_list(std::move(parts));
}

bool affix(const Value& self, Args& a, bool start) {
  const Value x = arg(a, 0, "prefix");
  auto one = [&](const std::string& p) {
    const std::string& s = self.str();
    if (p.size() > s.size()) return false;
    return start ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  if (x.is_string()) return one(x.str());
  if (x.is_list() && x.is_tuple) {
    for (const Value& p : *x.list) {
      if (!p.is_string()) type_error("tuple for startswith must only contain str");
      if (one(p.str())) return true;
    }
    return false;
  }
  type_error(std::string(start ? "startswith" : "endswith") + " first arg must be str or a tuple of str, not " + type_name(x));
}

// Python's str.title(): a cased character after an uncased one starts a word.
std::string py_title(const std::string& s) {
  bool prev_cased = false;
  return map_text(s, [&](uint32_t c, size_t) {
    const bool cased = is_cased_letter(c);
    const uint32_t out = cased ? map_case(c, prev_cased ? CaseMap::Lower : CaseMap::Upper) : c;
    prev_cased = cased;
    return out;
  });
}

// str.format with {} / {0} / {name} fields (no format specs beyond ":" dropped).
std::string py_format(const std::string& fmt, const Args& a) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      const size_t close = fmt.find('}', i);
      if (close == std::string::npos) fail("ValueError", "Single '{' encountered in format string");
      std::string field = fmt.substr(i + 1, close - i - 1);
      if (field.find(':') != std::string::npos || field.find('!') != std::string::npos)
        fail("ValueError", "format specs are not supported in str.format");
      Value v;
      if (field.empty()) v = arg(a, auto_index++, "");
      else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
        size_t index = size_t(-1);
        std::from_chars(field.data(), field.data() + field.size(), index);  // too large: no such argument
        v = arg(a, index, "");
      }
      else v = arg(a, size_t(-1), field.c_str());
      if (v.is_undefined()) fail("IndexError", "Replacement index out of range for positional args tuple");
      out += to_str(v);
      i = close;
    } else {
      out += c;
    }
  }
  return out;
}

Value str_method(Interpreter& in, const std::string& name, const Value& self, Args& a) {
  const std::string& s = self.str();
  if (name == "strip") return Value::string(strip(s, chars_arg(a), true, true));
  if (name == "lstrip") return Value::string(strip(s, chars_arg(a), true, false));
  if (name == "rstrip") return Value::string(strip(s, chars_arg(a), false, true));
  if (name == "split") return split(self, a, false);
  if (name == "rsplit") return split(self, a, true);
  if (name == "splitlines") {
    Items lines;
    size_t pos = 0;
    while (pos < s.size()) {
      size_t nl = s.find_first_of("\r\n", pos);
      if (nl == std::string::npos) {
        lines.push_back(Value::string(s.substr(pos)));
        break;
      }
      lines.push_back(Value::string(s.substr(pos, nl - pos)));
      pos = (s[nl] == '\r' && nl + 1 < s.size() && s[nl + 1] == '\n') ? nl + 2 : nl + 1;
    }
    return Value::make_list(std::move(lines));
  }
  if (name == "startswith") return Value::boolean(affix(self, a, true));
  if (name == "endswith") return Value::boolean(affix(self, a, false));
  if (name == "replace") return in.apply_filter("replace", self, a);
  if (name == "upper") return Value::string(upper(s));
  if (name == "lower") return Value::string(lower(s));
  if (name == "title") return Value::string(py_title(s));
  if (name == "capitalize") return in.apply_filter("capitalize", self, a);
  if (name == "find" || name == "index" || name == "rfind" || name == "rindex") {
    const std::string sub = str_arg(a, 0, "sub");
    const size_t hit = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
    if (hit == std::string::npos) {
      if (name.find("index") != std::string::npos) fail("ValueError", "substring not found");
      return Value::integer(-1);
    }
    return Value::integer(int64_t(utf8_length(s.substr(0, hit))));
  }
  if (name == "count") {
    const std::string sub = str_arg(a, 0, "sub");
    if (sub.empty()) return Value::integer(int64_t(utf8_length(s)) + 1);
    int64_t n = 0;
    for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
    return Value::integer(n);
  }
  if (name == "join") {
    std::string out;
    bool first = true;
    for (const Value& x : iterate(arg(a, 0, "iterable"))) {
      if (!x.is_string()) type_error("sequence item: expected str instance, " + type_name(x) + " found");
      if (!first) out += s;
      first = false;
      out += x.str();
      in.check_size(out.size());
    }
    return Value::string(out);
  }
  if (name == "format") return Value::string(py_format(s, a));
  auto all = [&](int (*pred)(int)) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) { return pred(static_cast<unsigned char>(c)) != 0; });
  };
  if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") return Value::boolean(all(::isdigit));
  if (name == "isalpha") return Value::boolean(all(::isalpha));
  if (name == "isalnum") return Value::boolean(all(::isalnum));
  if (name == "isspace") return Value::boolean(all(::isspace));
  if (name == "islower") return Value::boolean(in.apply_test("lower", self, a));
  if (name == "isupper") return Value::boolean(in.apply_test("upper", self, a));
  return Value::undefined();
}

Value dict_method(const std::string& name, const Value& self, Args& a) {
  const Dict& d = *self.dict;
  if (name == "get") {
    const Value* v = d.find(arg(a, 0, "key"));
    return v ? *v : arg(a, 1, "default", Value::none());
  }
  if (name == "items") {
    Items items;
    for (const auto& [k, v] : d.entries) items.push_back(Value::make_list({k, v}, true));
    return Value::make_list(std::move(items));
  }
  if (name == "keys" || name == "values") {
    Items items;
    for (const auto& [k, v] : d.entries) items.push_back(name == "keys" ? k : v);
    return Value::make_list(std::move(items));
  }
  if (name == "copy") {
    return Value::make_dict(std::make_shared<Dict>(d));
  }
  return Value::undefined();
}

Value list_method(const std::string& name, const Value& self, Args& a) {
  const Items& l = *self.list;
  if (name == "index") {
    const Value x = arg(a, 0, "value");
    for (size_t i = 0; i < l.size(); ++i)
      if (equal(l[i], x)) return Value::integer(int64_t(i));
    fail("ValueError", to_repr(x) + " is not in list");
  }
  if (name == "count") {
    const Value x = arg(a, 0, "value");
    int64_t n = 0;
    for (const Value& v : l) n += equal(v, x);
    return Value::integer(n);
  }
  if (name == "copy" && !self.is_tuple) return Value::make_list(l);
  return Value::undefined();
}

const std::unordered_set<std::string>& str_methods() {
  static const std::unordered_set<std::string> names = {
      "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "replace",
      "upper", "lower", "title", "capitalize", "find", "index", "rfind", "rindex", "count", "join", "format",
      "isdigit", "isnumeric", "isdecimal", "isalpha", "isalnum", "isspace", "islower", "isupper"};
  return names;
}

}  // namespace

Value bound_method(const Value& self, const std::string& name) {
  static const std::unordered_set<std::string> list_mutators = {"append", "extend", "insert", "pop", "remove",
                                                                "clear", "sort", "reverse"};
  static const std::unordered_set<std::string> dict_mutators = {"update", "pop", "popitem", "setdefault", "clear"};
  static const std::unordered_set<std::string> dict_methods = {"get", "items", "keys", "values", "copy"};
  static const std::unordered_set<std::string> list_methods = {"index", "count", "copy"};
  const bool is_list = self.is_list(), is_dict = self.kind == Value::Kind::Dict;
  if ((is_list && list_mutators.count(name)) || (is_dict && dict_mutators.count(name))) {
    auto fn = std::make_shared<Callable>();
    fn->name = name;
    const std::string type = type_name(self);
    fn->call = [name, type](Interpreter&, Args&) -> Value {
      fail("SecurityError", "access to attribute '" + name + "' of '" + type + "' object is unsafe.");
    };
    return Value::callable(fn);
  }
  const bool known = (self.is_string() && str_methods().count(name)) || (is_dict && dict_methods.count(name)) ||
                     (is_list && list_methods.count(name) && !(self.is_tuple && name == "copy"));
  if (!known) return Value::undefined();
  auto fn = std::make_shared<Callable>();
  fn->name = name;
  fn->call = [self, name](Interpreter& in, Args& a) -> Value {
    if (self.is_string()) return str_method(in, name, self, a);
    if (self.kind == Value::Kind::Dict) return dict_method(name, self, a);
    return list_method(name, self, a);
  };
  return Value::callable(fn);
}

}  // namespace tessera::jinja
