// The `pattern` keyword: strings walked at random through the grammar of a pattern all
// match it (std::wregex, ECMAScript, over code points, as JSON Schema's search); random
// strings and near misses are accepted by the grammar exactly when the regex matches
// them; what no grammar here can express is refused by name.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <string>

#include "grammar_walk.h"
#include "tessera/json_schema.h"

namespace tessera {
namespace {

using nlohmann::json;
using test::code_points;
using test::random_walk;
using test::test_alphabet;

std::shared_ptr<const Grammar> pattern_grammar(const std::string& pattern,
                                               const std::string& extra = "") {
  const std::string schema =
      R"({"type": "string", "pattern": )" + json(pattern).dump() + extra + "}";
  return test::schema_grammar(schema);
}

std::string error_of(const std::string& pattern, const std::string& extra = "") {
  Result<std::string> g = json_schema_to_grammar(R"({"type": "string", "pattern": )" +
                                                 json(pattern).dump() + extra + "}");
  return g.is_ok() ? std::string("(compiled)") : g.status().message();
}

/// True when the grammar takes `s` written as JSON (JSON.stringify's escapes).
bool accepts_string(const std::shared_ptr<const Grammar>& g, const std::string& s) {
  GrammarMatcher m(g);
  return m.accept_text(json(s).dump()) && m.can_end();
}

/// ECMAScript; with libstdc++, run as a Thompson NFA (its backtracking takes exponential
/// time on patterns like ^((a*)*b)+$, which this test has).
std::wregex oracle_regex(const std::string& pattern);

std::wstring wide(const std::string& utf8) {
  std::wstring out;
  for (const char32_t c : code_points(utf8)) out.push_back(static_cast<wchar_t>(c));
  return out;
}

std::string utf8(const std::u32string& cpts) {
  std::string out;
  for (const char32_t c : cpts) tok::append_utf8(static_cast<uint32_t>(c), out);
  return out;
}

std::wregex oracle_regex(const std::string& pattern) {
#ifdef __GLIBCXX__
  return std::wregex(wide(pattern), std::regex::ECMAScript | std::regex_constants::__polynomial);
#else
  return std::wregex(wide(pattern), std::regex::ECMAScript);
#endif
}

struct PatternCase {
  std::string pattern;
  std::string oracle;  // the same language for std::wregex, where its syntax differs
  size_t strings = 3;  // the fewest distinct strings 60 walks should find
};

// std::wregex's \s knows only ASCII spaces (ECMA-262's also U+00A0, U+2028, U+3000,
// U+FEFF, ...), and it has no named groups: those cases give the oracle spelled out.
const std::string kSpace =
    "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff";

const std::vector<PatternCase>& pattern_cases() {
  static const std::vector<PatternCase> cases = {
      {"^[a-z]+$", ""},
      {"^\\d{3}-\\d{4}$", ""},
      {"^(?:[A-Z][a-z]*)( [A-Z][a-z]*)*$", ""},
      {"^ab|yz$", ""},
      {"abc", ""},
      {"^abc", ""},
      {"xyz$", ""},
      {"^(ab|cd){2,3}$", ""},
      {"^[^\"\\\\]*$", ""},
      {"^.{2,5}$", ""},
      {"^\\w+@\\w+\\.com$", ""},
      {"^[\\x00-\\x1f]{1,3}$", ""},
      {"^[\"\\\\/]+$", ""},
      {"^(a?b?)*c$", ""},
      {"^((a*)*b)+$", ""},
      {"^a{0}b$", "", 1},
      {"^[\\s\\S]?$", ""},
      {"^\\S+$", "^[^" + kSpace + "]+$"},
      {"^\\s*x\\s*$", "^[" + kSpace + "]*x[" + kSpace + "]*$"},
      {"^[^a-z]$", ""},
      {"^\\u00e9+\\uD83D\\uDE00?$", "^\u00e9+\U0001F600?$"},
      {"^[a-c]{2}|[x-z]{3}$", ""},
      {"^(?:\\+|-)?\\d+(?:\\.\\d+)?$", ""},
      {"^$", "", 1},
      {"", ""},
      {"^(?<year>\\d{4})-(?<month>\\d\\d)$", "^(\\d{4})-(\\d\\d)$"},
      {"^a+?b*?$", ""},
      {"^[\\d\\-]+$", ""},
      {"^[-a]+$", ""},
      {"^\\.\\*\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$$", "", 1},
      {"^\\t\\n\\r\\f\\v\\0$", "", 1},
      {"^\\x41\\u0042[\\b]$", "", 1},
      {"^(x|xy|xyz)(z|)$", ""},
      {"[0-9]{2}", ""},
      {"^[\\W]{2}$", ""},
      {"^(?:(?:a|b)c?){1,4}$", ""},
      {"^.*é.*$", ""},
      {"^[😀-😂]+$", ""},
      {"^\\D\\W\\S$", "^[^0-9][^0-9A-Za-z_][^" + kSpace + "]$"},
      {"^(a|b|c|)$", ""},
  };
  return cases;
}

TEST(JsonSchemaPattern, StringsWalkedThroughTheGrammarMatchTheRegex) {
  const std::vector<uint32_t> alphabet = test_alphabet();
  std::mt19937 rng(7);
  for (const PatternCase& c : pattern_cases()) {
    SCOPED_TRACE("pattern " + json(c.pattern).dump());
    const auto g = pattern_grammar(c.pattern);
    ASSERT_TRUE(g);
    const std::wregex oracle = oracle_regex(c.oracle.empty() ? c.pattern : c.oracle);
    size_t distinct = 0;
    std::set<std::string> seen;
    for (int i = 0; i < 60; ++i) {
      const test::GrammarWalk walk = random_walk(g, alphabet, rng);
      ASSERT_FALSE(walk.stuck) << "dead end after " << walk.text;
      if (!walk.ended) continue;  // stopped by the step limit inside a string
      json value;
      ASSERT_NO_THROW(value = json::parse(walk.text)) << walk.text;
      ASSERT_TRUE(value.is_string()) << walk.text;
      const std::string s = value.get<std::string>();
      EXPECT_TRUE(std::regex_search(wide(s), oracle)) << "generated " << walk.text;
      EXPECT_EQ(value.dump(), walk.text) << "not written as JSON.stringify writes it";
      distinct += seen.insert(s).second;
    }
    EXPECT_GE(distinct, c.strings) << "the walks found too few strings";
  }
}

TEST(JsonSchemaPattern, GrammarAcceptsExactlyTheMatchingStrings) {
  // Random strings, and strings walked through the grammar then changed in one place
  // (near misses): the grammar takes each iff the regex matches it.
  const std::vector<uint32_t> alphabet = test_alphabet();
  std::mt19937 rng(11);
  for (const PatternCase& c : pattern_cases()) {
    SCOPED_TRACE("pattern " + json(c.pattern).dump());
    const auto g = pattern_grammar(c.pattern);
    ASSERT_TRUE(g);
    const std::wregex oracle = oracle_regex(c.oracle.empty() ? c.pattern : c.oracle);
    size_t matched = 0, refused = 0;
    const auto check = [&](const std::u32string& s) {
      const std::string text = utf8(s);
      const bool expected = std::regex_search(wide(text), oracle);
      EXPECT_EQ(accepts_string(g, text), expected) << json(text).dump();
      (expected ? matched : refused)++;
    };
    for (int i = 0; i < 150; ++i) {
      std::u32string s;
      const size_t n = rng() % 7;
      for (size_t k = 0; k < n; ++k)
        s.push_back(static_cast<char32_t>(alphabet[rng() % alphabet.size()]));
      check(s);
    }
    for (int i = 0; i < 60; ++i) {
      const test::GrammarWalk walk = random_walk(g, alphabet, rng);
      if (!walk.ended) continue;
      std::u32string s = code_points(json::parse(walk.text).get<std::string>());
      check(s);
      const char32_t letter = static_cast<char32_t>(alphabet[rng() % alphabet.size()]);
      const size_t at = s.empty() ? 0 : rng() % s.size();
      switch (rng() % 3) {
        case 0:
          s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), letter);
          break;
        case 1:
          if (!s.empty()) s.erase(at, 1);
          break;
        default:
          if (!s.empty()) s[at] = letter;
          break;
      }
      check(s);
    }
    EXPECT_GT(matched, 0u);
    if (!c.pattern.empty()) {
      EXPECT_GT(refused, 0u);
    }
  }
}

TEST(JsonSchemaPattern, UnanchoredSidesTakeAnyCharacters) {
  const auto inside = pattern_grammar("b+c");
  for (const char* ok : {"bc", "abbc", "bcx", "x\ny bbbc \"q\""})
    EXPECT_TRUE(accepts_string(inside, ok)) << ok;
  for (const char* bad : {"", "b", "c", "cb", "b c"})
    EXPECT_FALSE(accepts_string(inside, bad)) << bad;
  const auto start = pattern_grammar("^ab");
  EXPECT_TRUE(accepts_string(start, "abz\t"));
  EXPECT_FALSE(accepts_string(start, "zab"));
  const auto end = pattern_grammar("ab$");
  EXPECT_TRUE(accepts_string(end, "zzab"));
  EXPECT_FALSE(accepts_string(end, "abz"));
  const auto any = pattern_grammar("x*");  // matches the empty string somewhere in all
  for (const char* ok : {"", "y", "\u2028 \x01"}) EXPECT_TRUE(accepts_string(any, ok)) << ok;
}

TEST(JsonSchemaPattern, CharactersAreWrittenOneWay) {
  // As JSON.stringify writes them: \n, not \u000a; \u0001 in lower case; "/" raw.
  const auto g = pattern_grammar("^[\\n\\x01/é]+$");
  GrammarMatcher ok(g);
  EXPECT_TRUE(ok.accept_text("\"\\n\\u0001/é\"") && ok.can_end());
  for (const char* other :
       {"\"\\u000a\"", "\"\\u0001\"", "\"\\u000A\"", "\"\\/\"", "\"\\u00e9\""}) {
    GrammarMatcher m(g);
    const bool taken = m.accept_text(other) && m.can_end();
    EXPECT_EQ(taken, std::string(other) == "\"\\u0001\"") << other;
  }
}

TEST(JsonSchemaPattern, UnicodeEscapes) {
  const auto braces = pattern_grammar("^\\u{1F600}\\u{e9}$");
  EXPECT_TRUE(accepts_string(braces, "\U0001F600\u00e9"));
  EXPECT_FALSE(accepts_string(braces, "\U0001F600"));
  const auto pair = pattern_grammar("^[\\uD83D\\uDE00-\\uD83D\\uDE02]$");  // a range of pairs
  for (const char* ok : {"\U0001F600", "\U0001F602"}) EXPECT_TRUE(accepts_string(pair, ok));
  EXPECT_FALSE(accepts_string(pair, "\U0001F603"));
  EXPECT_EQ(error_of("\\u{110000}"), "json schema: (root): 'pattern' \"\\\\u{110000}\": malformed "
                                     "escape '\\u{...}' (character 1)");
}

TEST(JsonSchemaPattern, LengthsBesideAPattern) {
  const auto letters = pattern_grammar("^[a-z]+$", R"(, "maxLength": 3)");
  EXPECT_TRUE(accepts_string(letters, "abc"));
  EXPECT_FALSE(accepts_string(letters, "abcd"));
  EXPECT_FALSE(accepts_string(letters, ""));
  const auto code = pattern_grammar("^[A-Z]{2}-[0-9]*$", R"(, "minLength": 5, "maxLength": 6)");
  for (const char* ok : {"AB-12", "AB-123"}) EXPECT_TRUE(accepts_string(code, ok)) << ok;
  for (const char* bad : {"AB-1", "AB-1234", "AB-"}) EXPECT_FALSE(accepts_string(code, bad)) << bad;
  const auto implied = pattern_grammar("^\\d{5}$", R"(, "minLength": 5, "maxLength": 5)");
  EXPECT_TRUE(accepts_string(implied, "12345"));
  EXPECT_EQ(
      error_of("^(ab)+$", R"(, "maxLength": 4)"),
      "json schema: (root): 'maxLength' beside 'pattern' \"^(ab)+$\" cannot be combined in one "
      "grammar: only when every string the pattern matches meets them, or when its only part "
      "of varying length is one repeated character class");
  EXPECT_EQ(
      error_of("^\\d{5}$", R"(, "maxLength": 3)"),
      "json schema: (root): 'maxLength' and 'pattern' \"^\\\\d{5}$\": no string matches both");
  EXPECT_EQ(error_of("ab", R"(, "minLength": 1, "maxLength": 9)"),
            "json schema: (root): 'minLength' and 'maxLength' beside 'pattern' \"ab\" cannot be "
            "combined in one grammar: only when every string the pattern matches meets them, or "
            "when its only part of varying length is one repeated character class");
}

TEST(JsonSchemaPattern, EnumValuesAreCheckedAgainstThePattern) {
  Result<std::string> text =
      json_schema_to_grammar(R"({"enum": ["ab1", "abc", 7, "zz9"], "pattern": "^[a-z]+\\d$"})");
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  const auto g = *Grammar::parse(*text, "schema");
  for (const char* ok : {"\"ab1\"", "\"zz9\"", "7"}) {
    GrammarMatcher m(g);
    EXPECT_TRUE(m.accept_text(ok) && m.can_end()) << ok;
  }
  GrammarMatcher m(g);
  EXPECT_FALSE(m.accept_text("\"abc\"") && m.can_end());
}

TEST(JsonSchemaPattern, RefusedConstructsAreNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"a(?=b)", "lookahead '(?=' is not supported (character 2)"},
      {"a(?!b)", "negative lookahead '(?!' is not supported (character 2)"},
      {"(?<=a)b", "lookbehind '(?<=' is not supported (character 1)"},
      {"(?<!a)b", "negative lookbehind '(?<!' is not supported (character 1)"},
      {"(a)\\1", "backreference '\\1' is not supported: no grammar can express it (character 4)"},
      {"(?<x>a)\\k<x>",
       "named backreference '\\k<...>' is not supported: no grammar can express it (character 8)"},
      {"\\bword", "word boundary assertion '\\b' is not supported (character 1)"},
      {"\\p{L}+", "Unicode property escape '\\p{...}' is not supported (character 1)"},
      {"(?i)a", "unsupported group syntax '(?' (only (?:...) and (?<name>...)) (character 1)"},
      {"^a^",
       "'^' is supported only at the start of the pattern or of a top-level alternative (character "
       "3)"},
      {"a$b",
       "'$' is supported only at the end of the pattern or of a top-level alternative (character "
       "2)"},
      {"(^a)",
       "'^' is supported only at the start of the pattern or of a top-level alternative (character "
       "2)"},
      {"*a", "nothing to repeat before '*' (write '\\*' for the character) (character 1)"},
      {"a**", "nothing to repeat before '*' (character 3)"},
      {"a{2",
       "'{' that does not start a quantifier {m}, {m,} or {m,n} (write '\\{' for the character) "
       "(character 2)"},
      {"a{,3}",
       "'{' that does not start a quantifier {m}, {m,} or {m,n} (write '\\{' for the character) "
       "(character 2)"},
      {"[a", "unterminated character class '[' (character 1)"},
      {"(a", "missing ')' for this '(' (character 1)"},
      {"a)", "unbalanced ')' (character 2)"},
      {"[z-a]", "a range out of order in a character class (character 2)"},
      {"a{3,2}", "repetition {m,n} with m above n (character 2)"},
      {"a{10001}", "repetition count above 10000 (tessera's limit kMaxSchemaCount) (character 2)"},
      {"\\q", "unknown escape '\\q' (character 1)"},
      {"[\\d-z]",
       "a range with a class escape (\\d \\w \\s ...) in a character class (character 2)"},
      {"a\\", "'\\' at the end of the pattern (character 2)"},
      {"\\ud800", "a lone surrogate escape is not a character (character 1)"},
      {"[^\\s\\S]", "matches no string"},
  };
  for (const auto& [pattern, what] : cases) {
    const std::string e = error_of(pattern);
    const std::string prefix = "json schema: (root): 'pattern' " + json(pattern).dump();
    EXPECT_EQ(e, prefix + (std::string(what) == "matches no string" ? " " : ": ") + what)
        << pattern;
  }
  const std::string deep = error_of(std::string(65, '(') + "a" + std::string(65, ')'));
  EXPECT_NE(
      deep.find(": groups nested deeper than 64 levels (tessera's limit kMaxSchemaPatternNesting) "
                "(character 65)"),
      std::string::npos)
      << deep;
  EXPECT_EQ(error_of(std::string(64, '(') + "a" + std::string(64, ')')), "(compiled)");
  // Repeated optional parts nested: (a?X b?)* repeats "a?X b?" minus "", which copies X
  // twice; 10 levels make a grammar that parses, 64 would grow past the limit.
  const auto optional_levels = [](int levels) {
    std::string p = "^";
    for (int i = 0; i < levels; ++i) p += "(a?";
    for (int i = 0; i < levels; ++i) p += "b?)*";
    return p + "$";
  };
  const auto ten = pattern_grammar(optional_levels(10));
  EXPECT_TRUE(ten && accepts_string(ten, "aabba") && !accepts_string(ten, "c"));
  EXPECT_EQ(error_of(optional_levels(64)),
            "json schema: (root): 'pattern' " + json(optional_levels(64)).dump() +
                ": the pattern is too complex: its repetitions of optional "
                "parts would need more than 100000 parts (tessera's limit "
                "kMaxSchemaPatternParts)");
  Result<std::string> not_string = json_schema_to_grammar(R"({"type": "string", "pattern": 5})");
  EXPECT_EQ(not_string.status().message(), "json schema: (root): 'pattern' must be a string");
  Result<std::string> nested = json_schema_to_grammar(
      R"({"type": "object", "properties": {"id": {"type": "string", "pattern": "(a)\\1"}}})");
  EXPECT_EQ(nested.status().message().rfind("json schema: /properties/id: 'pattern' ", 0), 0u)
      << nested.status().message();
}

TEST(JsonSchemaPattern, OptionalPartsRepeatedHaveAGrammar) {
  // x* with x matching "" would be left recursion in GBNF: the tree repeats x minus "".
  for (const char* p :
       {"^(a*)*$", "^(a?)+b$", "^(a|)*$", "^((a?b?)?c?)*$", "^(()|a)*$", "^(a*){2,5}$"}) {
    const auto g = pattern_grammar(p);
    ASSERT_TRUE(g) << p;
    const std::wregex oracle = oracle_regex(p);
    for (const char* s : {"", "a", "aa", "b", "ab", "abc", "cab", "aaaaaa", "ba"})
      EXPECT_EQ(accepts_string(g, s), std::regex_search(wide(s), oracle)) << p << " on " << s;
  }
}

}  // namespace
}  // namespace tessera
