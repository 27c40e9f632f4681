// Reading the fields of a request body: typed, range-checked, with JSON null meaning
// "absent" (real clients send nulls for options they leave alone). Unknown fields are
// ignored; a known field of the wrong type or out of range throws a 400 ApiError naming
// it (message and `param`).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::server {

using nlohmann::json;

/// Parses a request body as one JSON object; a 400 for anything else (the parser's
/// message included). Nesting deeper than 64 levels is refused before parsing.
json parse_body(std::string_view body);
/// The same for a body that may be any JSON value (POST /lora-adapters takes an array).
json parse_json(std::string_view body);

/// Typed access to the members of a JSON object.
class Fields {
 public:
  /// `prefix` names the object in error messages ("" for the body, "stream_options.").
  explicit Fields(const json& object, std::string prefix = {});

  /// The member, or null when it is absent or JSON null.
  const json* get(const std::string& key) const;
  bool has(const std::string& key) const { return get(key) != nullptr; }

  std::optional<bool> boolean(const std::string& key) const;
  std::optional<int64_t> integer(const std::string& key, int64_t min, int64_t max) const;
  std::optional<double> number(const std::string& key, double min, double max) const;
  std::optional<std::string> string(const std::string& key) const;
  /// The member when it is an object (else a 400).
  const json* object(const std::string& key) const;
  /// The member when it is an array (else a 400).
  const json* array(const std::string& key) const;

  /// The full name of a member for messages and `param`.
  std::string name(const std::string& key) const { return prefix_ + key; }

 private:
  const json& object_;
  std::string prefix_;
};

/// The JSON type of `v` in words ("a string", "an array", ...), for messages.
std::string type_words(const json& v);

}  // namespace tessera::server
