// The regular expressions of the JSON-schema keyword `pattern` (ECMA-262 syntax, matched
// against code points as with the `u` flag): parsed into a small tree of code-point sets,
// sequences, alternatives and repetitions, which json_schema_pattern.cpp writes as GBNF.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/grammar/rules.h"
#include "tessera/status.h"

namespace tessera::grammar::schema {

constexpr uint32_t kRegexUnbounded = UINT32_MAX;

/// Code points as sorted, disjoint, non-adjacent inclusive ranges; never a surrogate
/// (U+D800..U+DFFF are not characters of a decoded JSON string).
using CodeSet = std::vector<CharRange>;

/// `set` sorted and merged, surrogates removed.
CodeSet normalize(CodeSet set);
/// Every code point (surrogates excepted) not in `set`.
CodeSet complement(const CodeSet& set);
/// Number of code points in `set`.
uint64_t set_size(const CodeSet& set);

struct Regex {
  enum class Kind : uint8_t {
    Nothing,  // matches no string
    Empty,    // matches the empty string only
    Chars,    // one code point of `chars`
    Seq,      // `parts` one after the other
    Alt,      // one of `parts`
    Repeat,   // parts[0], min..max times (max may be kRegexUnbounded)
  };
  Kind kind = Kind::Empty;
  CodeSet chars;
  std::vector<Regex> parts;
  uint32_t min = 0;
  uint32_t max = 0;
};

/// One top-level alternative of a pattern, and whether `^` / `$` anchor its ends.
struct PatternBranch {
  bool at_start = false;
  bool at_end = false;
  Regex body;
};

/// Parses `pattern` (UTF-8). Supported: literals, escapes (\t \n \v \f \r \0 \cX \xHH
/// \uHHHH \u{H...}, \ before punctuation), \d \w \s \D \W \S, `.`, classes [...] and
/// [^...] with ranges and class escapes, groups (...) (?:...) (?<name>...), `|`,
/// quantifiers * + ? {m} {m,} {m,n} (a lazy `?` after them changes nothing here), `^` at
/// the start and `$` at the end of the pattern or of a top-level alternative. Errors name
/// the construct and its character (1-based): lookarounds, backreferences, \b \B, \p{..},
/// anchors elsewhere, malformed syntax, counts above kMaxSchemaCount, nesting past
/// kMaxSchemaPatternNesting, trees past kMaxSchemaPatternParts.
Result<std::vector<PatternBranch>> parse_pattern(std::string_view pattern);

/// True when `r` matches the empty string.
bool nullable(const Regex& r);
/// A tree matching the non-empty strings `r` matches (Nothing when there are none).
Regex non_empty(const Regex& r);
/// Fewest and most code points of the strings `r` matches (max kRegexUnbounded: no limit;
/// {1, 0} for Nothing).
std::pair<uint64_t, uint64_t> length_range(const Regex& r);

}  // namespace tessera::grammar::schema
