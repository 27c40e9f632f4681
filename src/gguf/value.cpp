// gguf::Value: construction, typed access and the short human form.
#include <charconv>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "tessera/gguf.h"

namespace tessera::gguf {

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::U8: return "u8";
    case ValueType::I8: return "i8";
    case ValueType::U16: return "u16";
    case ValueType::I16: return "i16";
    case ValueType::U32: return "u32";
    case ValueType::I32: return "i32";
    case ValueType::F32: return "f32";
    case ValueType::Bool: return "bool";
    case ValueType::String: return "string";
    case ValueType::Array: return "array";
    case ValueType::U64: return "u64";
    case ValueType::I64: return "i64";
    case ValueType::F64: return "f64";
  }
  return "unknown";
}

bool is_known_value_type(uint32_t id) { return id <= static_cast<uint32_t>(ValueType::F64); }

Value::Value(ValueType type, ValueType array_type, Data data)
    : type_(type), array_type_(array_type), data_(std::move(data)) {}

Value::Value() : Value(ValueType::U8, ValueType::U8, uint8_t{0}) {}
Value::Value(uint8_t v) : Value(ValueType::U8, ValueType::U8, v) {}
Value::Value(int8_t v) : Value(ValueType::I8, ValueType::U8, v) {}
Value::Value(uint16_t v) : Value(ValueType::U16, ValueType::U8, v) {}
Value::Value(int16_t v) : Value(ValueType::I16, ValueType::U8, v) {}
Value::Value(uint32_t v) : Value(ValueType::U32, ValueType::U8, v) {}
Value::Value(int32_t v) : Value(ValueType::I32, ValueType::U8, v) {}
Value::Value(uint64_t v) : Value(ValueType::U64, ValueType::U8, v) {}
Value::Value(int64_t v) : Value(ValueType::I64, ValueType::U8, v) {}
Value::Value(float v) : Value(ValueType::F32, ValueType::U8, v) {}
Value::Value(double v) : Value(ValueType::F64, ValueType::U8, v) {}
Value::Value(bool v) : Value(ValueType::Bool, ValueType::U8, v) {}
Value::Value(std::string v) : Value(ValueType::String, ValueType::U8, std::move(v)) {}
Value::Value(std::string_view v) : Value(std::string(v)) {}
Value::Value(const char* v) : Value(std::string(v)) {}

#define TESSERA_GGUF_ARRAY_FACTORY(T, VT) \
  Value Value::array(std::vector<T> v) { return Value(ValueType::Array, ValueType::VT, std::move(v)); }
TESSERA_GGUF_ARRAY_FACTORY(uint8_t, U8)
TESSERA_GGUF_ARRAY_FACTORY(int8_t, I8)
TESSERA_GGUF_ARRAY_FACTORY(uint16_t, U16)
TESSERA_GGUF_ARRAY_FACTORY(int16_t, I16)
TESSERA_GGUF_ARRAY_FACTORY(uint32_t, U32)
TESSERA_GGUF_ARRAY_FACTORY(int32_t, I32)
TESSERA_GGUF_ARRAY_FACTORY(uint64_t, U64)
TESSERA_GGUF_ARRAY_FACTORY(int64_t, I64)
TESSERA_GGUF_ARRAY_FACTORY(float, F32)
TESSERA_GGUF_ARRAY_FACTORY(double, F64)
TESSERA_GGUF_ARRAY_FACTORY(bool, Bool)
TESSERA_GGUF_ARRAY_FACTORY(std::string, String)
#undef TESSERA_GGUF_ARRAY_FACTORY

Value Value::array(std::vector<Value> v) {
  for (const Value& e : v) TESSERA_CHECK_MSG(e.is_array(), "an array of arrays holds only arrays");
  return Value(ValueType::Array, ValueType::Array, std::move(v));
}

size_t Value::array_size() const {
  if (!is_array()) return 0;
  return std::visit(
      [](const auto& x) -> size_t {
        using X = std::decay_t<decltype(x)>;
        if constexpr (requires { x.size(); } && !std::is_same_v<X, std::string>) {
          return x.size();
        } else {
          return 0;
        }
      },
      data_);
}

std::optional<int64_t> Value::as_int() const {
  return std::visit(
      [](const auto& x) -> std::optional<int64_t> {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, uint64_t>) {
          if (x > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
          return int64_t(x);
        } else if constexpr (std::is_integral_v<X> && !std::is_same_v<X, bool>) {
          return int64_t(x);
        } else {
          return std::nullopt;
        }
      },
      data_);
}

std::optional<double> Value::as_float() const {
  return std::visit(
      [](const auto& x) -> std::optional<double> {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_arithmetic_v<X> && !std::is_same_v<X, bool>) {
          return double(x);
        } else {
          return std::nullopt;
        }
      },
      data_);
}

std::optional<bool> Value::as_bool() const {
  if (const bool* b = std::get_if<bool>(&data_)) return *b;
  return std::nullopt;
}

const std::string* Value::as_string() const { return std::get_if<std::string>(&data_); }

bool Value::operator==(const Value& other) const {
  return type_ == other.type_ && array_type_ == other.array_type_ && data_ == other.data_;
}

namespace {

void append_quoted(std::string& out, const std::string& s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  out += '"';
}

template <typename F>
void append_float(std::string& out, F v) {
  if (std::isnan(v)) {
    out += "nan";
    return;
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, r.ptr);
}

void append_scalar(std::string& out, const auto& x) {
  using X = std::decay_t<decltype(x)>;
  if constexpr (std::is_same_v<X, bool>) {
    out += x ? "true" : "false";
  } else if constexpr (std::is_floating_point_v<X>) {
    append_float(out, x);
  } else if constexpr (std::is_integral_v<X>) {
    out += std::to_string(x);
  } else if constexpr (std::is_same_v<X, std::string>) {
    append_quoted(out, x);
  } else {
    out += x.to_string();  // a nested Value
  }
}

template <typename Vec>
void append_array(std::string& out, const Vec& v, size_t max_items) {
  out += '[';
  const size_t shown = std::min(v.size(), max_items);
  for (size_t i = 0; i < shown; ++i) {
    if (i) out += ", ";
    if constexpr (std::is_same_v<Vec, std::vector<bool>>) {
      out += v[i] ? "true" : "false";
    } else if constexpr (std::is_same_v<Vec, std::vector<Value>>) {
      out += v[i].to_string(max_items);
    } else {
      append_scalar(out, v[i]);
    }
  }
  if (shown < v.size()) {
    out += shown ? ", ... (" : "... (";
    out += std::to_string(v.size()) + " items)";
  }
  out += ']';
}

}  // namespace

std::string Value::to_string(size_t max_items) const {
  std::string out;
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (requires { typename X::allocator_type; } && !std::is_same_v<X, std::string>) {
          append_array(out, x, max_items);
        } else {
          append_scalar(out, x);
        }
      },
      data_);
  return out;
}

}  // namespace tessera::gguf
