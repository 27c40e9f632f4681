// Helpers shared by the filters, tests, globals and methods: argument access by position
// or keyword, attribute paths, case folding.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "template/error.h"
#include "template/interpreter.h"

namespace tessera::jinja {

/// Argument `index` (positional) or `name` (keyword) of a call, or `fallback`.
inline Value arg(const Args& a, size_t index, const char* name, Value fallback = Value::undefined()) {
  for (const auto& [k, v] : a.keyword)
    if (k == name) return v;
  if (index < a.positional.size()) return a.positional[index];
  return fallback;
}

/// The value at a dotted path ("a.b.0") as jinja2's make_attrgetter resolves it.
Value attribute_path(Interpreter& in, const Value& obj, const std::string& path);

/// Python's str.lower() / str.upper(), one code point to one (no special casing).
std::string lower(std::string s);
std::string upper(std::string s);
enum class CaseMap { Upper, Lower };
uint32_t map_case(uint32_t cp, CaseMap how);
/// Whether a code point is a letter (Python's "cased" characters, nearly).
bool is_cased_letter(uint32_t cp);
/// Each code point of UTF-8 text through f(code point, its index); invalid bytes pass.
std::string map_text(const std::string& s, const std::function<uint32_t(uint32_t, size_t)>& f);

/// Python's str.strip(chars) family: `chars` empty = whitespace.
std::string strip(const std::string& s, const std::string& chars, bool left, bool right);

}  // namespace tessera::jinja
