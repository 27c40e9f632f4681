#include "template/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "template/error.h"

namespace tessera::jinja {

Value Value::undefined(std::string hint) {
  Value v;
  v.undefined_hint = std::move(hint);
  return v;
}
Value Value::none() {
  Value v;
  v.kind = Kind::None;
  return v;
}
Value Value::boolean(bool x) {
  Value v;
  v.kind = Kind::Bool;
  v.b = x;
  return v;
}
Value Value::integer(int64_t x) {
  Value v;
  v.kind = Kind::Int;
  v.i = x;
  return v;
}
Value Value::number(double x) {
  Value v;
  v.kind = Kind::Float;
  v.f = x;
  return v;
}
Value Value::string(std::string x) {
  Value v;
  v.kind = Kind::String;
  v.s = std::make_shared<const std::string>(std::move(x));
  return v;
}
namespace {
uint16_t nesting_of(int deepest_child) {
  if (deepest_child + 1 > Value::kMaxNesting)
    fail("LimitError", "lists and dicts nested deeper than " + std::to_string(Value::kMaxNesting));
  return uint16_t(deepest_child + 1);
}
}  // namespace

Value Value::make_list(Items items, bool tuple) {
  Value v;
  int deepest = 0;
  for (const Value& x : items) deepest = std::max<int>(deepest, x.nesting);
  v.nesting = nesting_of(deepest);
  v.kind = Kind::List;
  v.list = std::make_shared<Items>(std::move(items));
  v.is_tuple = tuple;
  return v;
}
Value Value::make_dict(std::shared_ptr<Dict> d) {
  Value v;
  int deepest = 0;
  for (const auto& [k, x] : d->entries) deepest = std::max<int>({deepest, k.nesting, x.nesting});
  v.nesting = nesting_of(deepest);
  v.kind = Kind::Dict;
  v.dict = std::move(d);
  return v;
}
Value Value::make_namespace(std::shared_ptr<Dict> d) {
  Value v;
  v.kind = Kind::Namespace;
  v.dict = std::move(d);
  return v;
}
Value Value::callable(std::shared_ptr<Callable> c) {
  Value v;
  v.kind = Kind::Callable;
  v.fn = std::move(c);
  return v;
}

int64_t saturate_to_int(double f) {
  if (std::isnan(f)) return 0;
  if (f >= 9223372036854775807.0) return INT64_MAX;
  if (f <= -9223372036854775808.0) return INT64_MIN;
  return int64_t(f);
}

bool fits_int(double f) { return std::isfinite(f) && f < 9223372036854775807.0 && f >= -9223372036854775808.0; }

double Value::as_double() const {
  switch (kind) {
    case Kind::Bool: return b ? 1.0 : 0.0;
    case Kind::Int: return double(i);
    case Kind::Float: return f;
    default: type_error("expected a number, got " + type_name(*this));
  }
}

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : entries)
    if (equal(k, key)) return &v;
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k.kind == Value::Kind::String && *k.s == key) return &v;
  return nullptr;
}

void Dict::set(const Value& key, Value value) {
  for (auto& [k, v] : entries)
    if (equal(k, key)) {
      v = std::move(value);
      return;
    }
  entries.emplace_back(key, std::move(value));
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.b;
    case Value::Kind::Int: return v.i != 0;
    case Value::Kind::Float: return v.f != 0.0;
    case Value::Kind::String: return !v.s->empty();
    case Value::Kind::List: return !v.list->empty();
    case Value::Kind::Dict: return !v.dict->entries.empty();
    case Value::Kind::Callable:
    case Value::Kind::Namespace: return true;
  }
  return false;
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::None: return "NoneType";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::List: return v.is_tuple ? "tuple" : "list";
    case Value::Kind::Dict: return "dict";
    case Value::Kind::Callable: return "function";
    case Value::Kind::Namespace: return "Namespace";
  }
  return "object";
}

namespace {
constexpr int kMaxValueDepth = 512;  // containers nested in containers, for ==, str() and repr()
}

bool equal(const Value& a, const Value& b) { return equal_at(a, b, 0); }

bool equal_at(const Value& a, const Value& b, int depth) {
  using K = Value::Kind;
  if (depth > kMaxValueDepth) fail("LimitError", "values nested deeper than 512 to compare");
  if (a.is_number() && b.is_number()) {
    if (a.kind != K::Float && b.kind != K::Float) {
      const int64_t x = a.kind == K::Bool ? a.b : a.i, y = b.kind == K::Bool ? b.b : b.i;
      return x == y;
    }
    return a.as_double() == b.as_double();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::Undefined:
    case K::None: return true;
    case K::String: return *a.s == *b.s;
    case K::List:
      if (a.is_tuple != b.is_tuple || a.list->size() != b.list->size()) return false;
      for (size_t i = 0; i < a.list->size(); ++i)
        if (!equal_at((*a.list)[i], (*b.list)[i], depth + 1)) return false;
      return true;
    case K::Dict:
      if (a.dict->entries.size() != b.dict->entries.size()) return false;
      for (const auto& [k, v] : a.dict->entries) {
        const Value* other = b.dict->find(k);
        if (!other || !equal_at(v, *other, depth + 1)) return false;
      }
      return true;
    case K::Callable: return a.fn == b.fn;
    case K::Namespace: return a.dict == b.dict;
    default: return false;
  }
}

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: positional when the decimal
  // exponent is in [-4, 16), else d.ddde+XX.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, end);  // like -1.2345e+02
  const size_t e = sci.find('e');
  const int exp10 = std::stoi(sci.substr(e + 1));
  std::string mant = sci.substr(0, e);
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp10 >= -4 && exp10 < 16) {
    const int point = exp10 + 1;  // digits before the decimal point
    if (point <= 0) {
      out = "0." + std::string(size_t(-point), '0') + digits;
    } else if (size_t(point) >= digits.size()) {
      out = digits + std::string(size_t(point) - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, size_t(point)) + "." + digits.substr(size_t(point));
    }
  }
  if (out.empty()) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';  // appended apart: `"." + digits.substr(1)` trips GCC 12's -Wrestrict (a false positive)
      out.append(digits, 1);
    }
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += ebuf;
  }
  return neg ? "-" + out : out;
}

namespace {

std::string string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == q || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  out += q;
  return out;
}

}  // namespace

std::string to_repr(const Value& v) { return repr_at(v, 0); }

std::string repr_at(const Value& v, int depth) {
  if (depth > kMaxValueDepth) fail("LimitError", "values nested deeper than 512 to print");
  switch (v.kind) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::String: return string_repr(*v.s);
    case Value::Kind::List: {
      std::string out = v.is_tuple ? "(" : "[";
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += ", ";
        out += repr_at((*v.list)[i], depth + 1);
      }
      if (v.is_tuple && v.list->size() == 1) out += ",";
      return out + (v.is_tuple ? ")" : "]");
    }
    case Value::Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.dict->entries) {
        if (!first) out += ", ";
        first = false;
        out += repr_at(k, depth + 1) + ": " + repr_at(x, depth + 1);
      }
      return out + "}";
    }
    case Value::Kind::Namespace: return "<Namespace>";
    case Value::Kind::Callable: return "<function " + v.fn->name + ">";
    default: return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.b ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.i);
    case Value::Kind::Float: return float_repr(v.f);
    case Value::Kind::String: return *v.s;
    default: return to_repr(v);
  }
}

uint32_t next_codepoint(const std::string& s, size_t& i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
  if (len == 0 || i + len > s.size()) {
    ++i;
    return 0xFFFFFFFF;
  }
  uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < len; ++k) {
    const unsigned char x = static_cast<unsigned char>(s[i + k]);
    if ((x & 0xC0) != 0x80) {
      ++i;
      return 0xFFFFFFFF;
    }
    cp = (cp << 6) | (x & 0x3F);
  }
  i += len;
  return cp;
}

void append_codepoint(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::vector<std::string> utf8_chars(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t len = 1;
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0xF0) len = 4;
    else if (c >= 0xE0) len = 3;
    else if (c >= 0xC0) len = 2;
    len = std::min(len, s.size() - i);
    out.emplace_back(s.substr(i, len));
    i += len;
  }
  return out;
}

}  // namespace tessera::jinja
