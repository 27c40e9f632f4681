#include "server/json_fields.h"

#include <algorithm>
#include <cmath>

#include "server/errors.h"
#include "server/request_limits.h"

namespace tessera::server {
namespace {

constexpr int kMaxDepth = limits::kMaxJsonDepth;

/// The deepest nesting of arrays and objects in `text` (outside strings); stops counting
/// once past kMaxDepth. Malformed text is left to the parser.
int nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char ch : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > kMaxDepth) return deepest;
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  return deepest;
}

std::string range_text(double min, double max) {
  auto fmt = [](double v) {
    if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(int64_t(v));
    std::string s = std::to_string(v);
    while (!s.empty() && s.back() == '0') s.pop_back();
    return s;
  };
  return "between " + fmt(min) + " and " + fmt(max);
}

}  // namespace

json parse_body(std::string_view body) {
  json j = parse_json(body);
  if (!j.is_object())
    throw bad_request("request body must be a JSON object, not " + type_words(j), "invalid_json");
  return j;
}

json parse_json(std::string_view body) {
  if (nesting_depth(body) > kMaxDepth) {
    throw bad_request("request body nests arrays or objects deeper than " + std::to_string(kMaxDepth) +
                      " levels (the server's limit kMaxJsonDepth)", "invalid_json");
  }
  json j;
  try {
    j = json::parse(body.begin(), body.end());
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    throw bad_request(std::string("request body is not valid JSON: ") + e.what(), "invalid_json");
  }
  return j;
}

std::string type_words(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    default: return "a value";
  }
}

Fields::Fields(const json& object, std::string prefix) : object_(object), prefix_(std::move(prefix)) {}

const json* Fields::get(const std::string& key) const {
  if (!object_.is_object()) return nullptr;
  const auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<bool> Fields::boolean(const std::string& key) const {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw bad_field(name(key), "'" + name(key) + "' must be a boolean, not " + type_words(*v));
  return v->get<bool>();
}

std::optional<int64_t> Fields::integer(const std::string& key, int64_t min, int64_t max) const {
  const json* v = get(key);
  if (!v) return std::nullopt;
  double value = 0;
  if (v->is_number_integer() && !v->is_number_unsigned()) {
    value = double(v->get<int64_t>());
  } else if (v->is_number_unsigned()) {
    value = double(v->get<uint64_t>());
  } else if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>()) {
    value = v->get<double>();
  } else {
    throw bad_field(name(key), "'" + name(key) + "' must be an integer, not " + type_words(*v));
  }
  if (value < double(min) || value > double(max)) {
    throw bad_field(name(key), "'" + name(key) + "' must be " + range_text(double(min), double(max)));
  }
  if (v->is_number_unsigned()) return int64_t(v->get<uint64_t>());
  return v->is_number_integer() ? v->get<int64_t>() : int64_t(value);
}

std::optional<double> Fields::number(const std::string& key, double min, double max) const {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw bad_field(name(key), "'" + name(key) + "' must be a number, not " + type_words(*v));
  const double value = v->get<double>();
  if (!(value >= min && value <= max)) {
    throw bad_field(name(key), "'" + name(key) + "' must be " + range_text(min, max));
  }
  return value;
}

std::optional<std::string> Fields::string(const std::string& key) const {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw bad_field(name(key), "'" + name(key) + "' must be a string, not " + type_words(*v));
  return v->get<std::string>();
}

const json* Fields::object(const std::string& key) const {
  const json* v = get(key);
  if (v && !v->is_object()) {
    throw bad_field(name(key), "'" + name(key) + "' must be an object, not " + type_words(*v));
  }
  return v;
}

const json* Fields::array(const std::string& key) const {
  const json* v = get(key);
  if (v && !v->is_array()) {
    throw bad_field(name(key), "'" + name(key) + "' must be an array, not " + type_words(*v));
  }
  return v;
}

}  // namespace tessera::server
