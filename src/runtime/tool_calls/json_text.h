// JSON as the tool-call parsers meet it: inside generated text, perhaps not finished yet.
// scan() tells whether a value starting at some point is complete (and where it ends),
// still a valid beginning, or broken; the other helpers read values scan() found
// complete, keeping their text as the model wrote it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::tool_calls::json {

enum class Scan {
  Complete,  // a whole value; `end` is one past it
  Partial,   // the text ends inside a value it validly begins
  Invalid,   // not JSON (or nested deeper than kMaxDepth)
};

struct ScanResult {
  Scan kind = Scan::Invalid;
  size_t end = 0;
};

constexpr int kMaxDepth = 256;

/// Scans the JSON value at text[pos] (no whitespace skipped). `final`: the text ends for
/// good, so a number running to the end is complete and Partial becomes Invalid.
ScanResult scan(std::string_view text, size_t pos, bool final);

/// JSON whitespace: space, tab, newline, carriage return.
inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
/// The first position from `pos` that is not JSON whitespace.
size_t skip_space(std::string_view text, size_t pos);

/// `value` (complete, valid) without the whitespace outside its strings.
std::string compact(std::string_view value);
/// `text` as a JSON string literal (quotes included; control characters escaped).
std::string quote(std::string_view text);

/// One member of an object: its key decoded, its value's text.
struct Member {
  std::string key;
  std::string_view value;
};
/// The members of `value` (complete, valid), or nullopt when it is not an object.
std::optional<std::vector<Member>> members(std::string_view value);
/// The value of `key` among `m`, or nullopt.
std::optional<std::string_view> find(const std::vector<Member>& m, std::string_view key);
/// The elements of `value` (complete, valid), or nullopt when it is not an array.
std::optional<std::vector<std::string_view>> elements(std::string_view value);
/// The decoded text of a string value, or nullopt when `value` is not a string.
std::optional<std::string> string_value(std::string_view value);

}  // namespace tessera::tool_calls::json
