// The string formats the JSON-schema compiler turns into grammar rules (`format`).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::grammar::schema {

struct StringFormat {
  std::string name;         // the format's name in a schema
  std::string rule;         // the fixed rule (format_rules()) of the whole JSON string
  uint32_t min_length = 0;  // the lengths of the strings it matches, in code points
  uint32_t max_length = 0;
};

/// The format called `name`, or null when tessera has no rule for it.
const StringFormat* find_format(std::string_view name);
/// Every format, in the order of the documentation.
const std::vector<StringFormat>& string_formats();

}  // namespace tessera::grammar::schema
