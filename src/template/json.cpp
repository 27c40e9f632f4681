// Values to JSON text as Python's json.dumps writes them (transformers' `tojson`), and
// JSON documents (the render context) to values.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "template/builtins.h"
#include "template/json_value.h"

namespace tessera::jinja {
namespace {

void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      case '\b': out += "\\b"; ++i; continue;
      case '\f': out += "\\f"; ++i; continue;
      default: break;
    }
    if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      ++i;
    } else if (c < 0x80 || !ensure_ascii) {
      out += char(c);
      ++i;
    } else {
      const size_t at = i;
      uint32_t cp = next_codepoint(s, i);
      if (cp == 0xFFFFFFFF) cp = static_cast<unsigned char>(s[at]);  // a stray byte as its value
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      }
      out += buf;
    }
  }
  out += '"';
}

std::string key_text(const Value& k) {
  switch (k.kind) {
    case Value::Kind::String: return k.str();
    case Value::Kind::Bool: return k.b ? "true" : "false";
    case Value::Kind::None: return "null";
    case Value::Kind::Int:
    case Value::Kind::Float: return to_str(k);
    default: type_error("keys must be str, int, float, bool or None, not " + type_name(k));
  }
}

void dump(std::string& out, const Value& v, const JsonStyle& st, Interpreter& in, int level) {
  in.step();
  in.check_size(out.size());
  if (level > 512) fail("ValueError", "Circular reference detected");
  auto newline = [&](int lv) {
    if (st.indent < 0) return;
    out += '\n';
    for (int k = 0; k < lv; ++k) out += st.indent_text;
  };
  switch (v.kind) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.b ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.i); return;
    case Value::Kind::Float:
      if (std::isnan(v.f)) out += "NaN";
      else if (std::isinf(v.f)) out += v.f > 0 ? "Infinity" : "-Infinity";
      else out += float_repr(v.f);
      return;
    case Value::Kind::String: json_string(out, v.str(), st.ensure_ascii); return;
    case Value::Kind::List: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += st.item_sep;
        newline(level + 1);
        dump(out, (*v.list)[i], st, in, level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      if (v.dict->entries.empty()) {
        out += "{}";
        return;
      }
      std::vector<std::pair<std::string, const Value*>> items;
      for (const auto& [k, x] : v.dict->entries) items.emplace_back(key_text(k), &x);
      if (st.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += st.item_sep;
        newline(level + 1);
        json_string(out, items[i].first, st.ensure_ascii);
        out += st.key_sep;
        dump(out, *items[i].second, st, in, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default: type_error("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style, Interpreter& in) {
  std::string out;
  dump(out, v, style, in, 0);
  return out;
}

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      return u <= uint64_t(INT64_MAX) ? Value::integer(int64_t(u)) : Value::number(double(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Items items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(from_json(x));
      return Value::make_list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto d = std::make_shared<Dict>();
      d->entries.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) d->entries.emplace_back(Value::string(it.key()), from_json(it.value()));
      return Value::make_dict(d);
    }
    default: return Value::none();
  }
}

}  // namespace tessera::jinja
