#include "cli/value_list.h"

#include <charconv>

namespace tessera::cli {
namespace {

constexpr size_t kMaxRange = 1024;

/// A whole decimal number that is all of `text`.
bool whole_number(std::string_view text, int64_t& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

Result<std::vector<int64_t>> expand_value_list(const std::vector<std::string>& items, const std::string& flag,
                                               int64_t min, int64_t max) {
  std::vector<int64_t> out;
  auto bad = [&](const std::string& item, const std::string& why) {
    return Status::error(flag + ": '" + item + "' " + why);
  };
  for (const std::string& item : items) {
    const std::string_view s(item);
    int64_t v = 0;
    if (whole_number(s, v)) {
      if (v < min || v > max) {
        return bad(item, "is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
      }
      out.push_back(v);
      continue;
    }
    // A range: FIRST-LAST, then an optional +STEP or *FACTOR (the dash is looked for
    // after the first character, so "-1" alone is a number, not a range).
    const size_t dash = s.find('-', 1);
    const size_t op = s.find_first_of("+*", dash == std::string_view::npos ? 0 : dash);
    int64_t first = 0, last = 0, by = 1;
    if (dash == std::string_view::npos || !whole_number(s.substr(0, dash), first) ||
        !whole_number(s.substr(dash + 1, op == std::string_view::npos ? std::string_view::npos : op - dash - 1),
                      last) ||
        (op != std::string_view::npos && !whole_number(s.substr(op + 1), by))) {
      return bad(item, "is not a number nor a range FIRST-LAST[+STEP|*FACTOR]");
    }
    const bool multiply = op != std::string_view::npos && s[op] == '*';
    if (first < min || last > max || first > last) {
      return bad(item, "is not a range within [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    if (multiply ? (by < 2 || first < 1) : by < 1) {
      return bad(item, multiply ? "needs a factor of at least 2 and a first value of at least 1"
                                : "needs a step of at least 1");
    }
    size_t n = 0;
    for (int64_t x = first; x <= last; x = multiply ? x * by : x + by) {
      if (++n > kMaxRange) return bad(item, "has more than " + std::to_string(kMaxRange) + " values");
      out.push_back(x);
      if (multiply ? x > last / by : x > last - by) break;  // the next one would pass LAST (or overflow)
    }
  }
  return out;
}

}  // namespace tessera::cli
