// The `pattern` keyword's regular expressions: ECMA-262 syntax parsed into a Regex tree.
// Repetitions never repeat a part that can match the empty string (x* with x nullable
// becomes (x minus the empty string)*), so that the GBNF written from the tree has no
// left recursion and no needless ambiguity.
#include "runtime/grammar/json_schema_regex.h"

#include <algorithm>
#include <tuple>

#include "tessera/limits.h"
#include "tokenizer/unicode.h"

namespace tessera::grammar::schema {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr uint32_t kMaxCount = static_cast<uint32_t>(limits::kMaxSchemaCount);
constexpr int kMaxNesting = limits::kMaxSchemaPatternNesting;
constexpr size_t kMaxParts = limits::kMaxSchemaPatternParts;

const CodeSet kDigits = {{'0', '9'}};
const CodeSet kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMA-262 WhiteSpace and LineTerminator.
const CodeSet kSpace = {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680},
                        {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                        {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const CodeSet kLineTerminators = {{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}};

bool is_hex(char32_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
uint32_t hex_value(char32_t c) {
  if (c <= '9') return c - '0';
  return (c | 0x20) - 'a' + 10;
}
bool is_digit(char32_t c) { return c >= '0' && c <= '9'; }

Regex chars(CodeSet set) {
  Regex r;
  r.kind = Regex::Kind::Chars;
  r.chars = normalize(std::move(set));
  if (r.chars.empty()) r.kind = Regex::Kind::Nothing;
  return r;
}

Regex of_kind(Regex::Kind kind) {
  Regex r;
  r.kind = kind;
  return r;
}

Regex make_seq(std::vector<Regex> parts) {
  std::vector<Regex> flat;
  for (Regex& p : parts) {
    if (p.kind == Regex::Kind::Nothing) return of_kind(Regex::Kind::Nothing);
    if (p.kind == Regex::Kind::Empty) continue;
    if (p.kind == Regex::Kind::Seq) {
      for (Regex& q : p.parts) flat.push_back(std::move(q));
    } else {
      flat.push_back(std::move(p));
    }
  }
  if (flat.empty()) return of_kind(Regex::Kind::Empty);
  if (flat.size() == 1) return std::move(flat[0]);
  Regex r = of_kind(Regex::Kind::Seq);
  r.parts = std::move(flat);
  return r;
}

/// The alternatives without Nothing; single code-point sets merged into one set.
Regex make_alt(std::vector<Regex> parts) {
  std::vector<Regex> flat;
  CodeSet merged;
  size_t chars_at = SIZE_MAX;
  bool has_empty = false;
  for (Regex& p : parts) {
    if (p.kind == Regex::Kind::Alt) {
      for (Regex& q : p.parts) flat.push_back(std::move(q));
    } else {
      flat.push_back(std::move(p));
    }
  }
  std::vector<Regex> out;
  for (Regex& p : flat) {
    if (p.kind == Regex::Kind::Nothing) continue;
    if (p.kind == Regex::Kind::Empty) {
      if (!has_empty) out.push_back(std::move(p));
      has_empty = true;
    } else if (p.kind == Regex::Kind::Chars) {
      if (chars_at == SIZE_MAX) {
        chars_at = out.size();
        out.push_back(of_kind(Regex::Kind::Chars));
      }
      merged.insert(merged.end(), p.chars.begin(), p.chars.end());
    } else {
      out.push_back(std::move(p));
    }
  }
  if (chars_at != SIZE_MAX) out[chars_at].chars = normalize(std::move(merged));
  if (out.empty()) return of_kind(Regex::Kind::Nothing);
  if (out.size() == 1) return std::move(out[0]);
  Regex r = of_kind(Regex::Kind::Alt);
  r.parts = std::move(out);
  return r;
}

size_t tree_size(const Regex& r) {
  size_t n = 1;
  for (const Regex& p : r.parts) n += tree_size(p);
  return n;
}

class RegexParser {
 public:
  explicit RegexParser(std::u32string p) : p_(std::move(p)) {}

  Result<std::vector<PatternBranch>> parse();

 private:
  bool at_end() const { return pos_ >= p_.size(); }
  char32_t peek(size_t ahead = 0) const {
    return pos_ + ahead < p_.size() ? p_[pos_ + ahead] : U'\0';
  }
  Status error(size_t at, const std::string& what) const {
    return Status::error(what + " (character " + std::to_string(at + 1) + ")");
  }

  Result<Regex> sequence(int depth, bool* at_end_anchor);
  Result<Regex> disjunction(int depth, size_t open);
  Result<Regex> atom(int depth);
  Result<Regex> group(int depth);
  Result<Regex> quantified(Regex atom);
  Result<std::pair<uint32_t, uint32_t>> braces();
  Result<CodeSet> char_class();
  /// After a backslash: the code points of a class escape (\d \w \s and negations), or
  /// empty when the escape is not one.
  CodeSet class_escape(char32_t c) const;
  Result<uint32_t> char_escape(bool in_class);
  Result<uint32_t> hex_digits(size_t count, size_t at);
  Result<uint32_t> unicode_escape(size_t at);

  /// x{min,max}, with a nullable x replaced by its non-empty strings.
  Result<Regex> make_repeat(Regex x, uint32_t min, uint32_t max);
  Result<Regex> non_empty(const Regex& r);
  Status spend(size_t nodes);

  std::u32string p_;
  size_t pos_ = 0;
  size_t nodes_ = 0;
};

Result<std::vector<PatternBranch>> RegexParser::parse() {
  std::vector<PatternBranch> branches;
  for (;;) {
    PatternBranch b;
    if (peek() == '^') {
      b.at_start = true;
      ++pos_;
    }
    Result<Regex> seq = sequence(0, &b.at_end);
    if (!seq) return seq.status();
    b.body = std::move(*seq);
    branches.push_back(std::move(b));
    if (at_end()) return branches;
    if (peek() == ')') return error(pos_, "unbalanced ')'");
    ++pos_;  // '|'
  }
}

Result<Regex> RegexParser::sequence(int depth, bool* at_end_anchor) {
  std::vector<Regex> parts;
  while (!at_end() && peek() != '|' && peek() != ')') {
    const char32_t c = peek();
    const size_t at = pos_;
    if (c == '$') {
      if (at_end_anchor && (pos_ + 1 == p_.size() || p_[pos_ + 1] == '|')) {
        *at_end_anchor = true;
        ++pos_;
        break;
      }
      return error(at,
                   "'$' is supported only at the end of the pattern or of a top-level "
                   "alternative");
    }
    if (c == '^') {
      return error(at,
                   "'^' is supported only at the start of the pattern or of a top-level "
                   "alternative");
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') {
      return error(at, std::string("nothing to repeat before '") + static_cast<char>(c) +
                           "' (write '\\" + static_cast<char>(c) + "' for the character)");
    }
    Result<Regex> a = atom(depth);
    if (!a) return a.status();
    Result<Regex> q = quantified(std::move(*a));
    if (!q) return q.status();
    parts.push_back(std::move(*q));
  }
  return make_seq(std::move(parts));
}

Result<Regex> RegexParser::disjunction(int depth, size_t open) {
  std::vector<Regex> alts;
  for (;;) {
    Result<Regex> seq = sequence(depth, nullptr);
    if (!seq) return seq.status();
    alts.push_back(std::move(*seq));
    if (at_end()) return error(open, "missing ')' for this '('");
    if (peek() == ')') {
      ++pos_;
      return make_alt(std::move(alts));
    }
    ++pos_;  // '|'
  }
}

Result<Regex> RegexParser::group(int depth) {
  const size_t open = pos_++;
  if (depth + 1 > kMaxNesting) {
    return error(open, "groups nested deeper than " + std::to_string(kMaxNesting) +
                           " levels (tessera's limit kMaxSchemaPatternNesting)");
  }
  if (peek() == '?') {
    static const std::pair<std::u32string_view, const char*> kRefused[] = {
        {U"?=", "lookahead '(?='"},
        {U"?!", "negative lookahead '(?!'"},
        {U"?<=", "lookbehind '(?<='"},
        {U"?<!", "negative lookbehind '(?<!'"},
    };
    const std::u32string_view rest = std::u32string_view(p_).substr(pos_);
    for (const auto& [prefix, name] : kRefused) {
      if (rest.substr(0, prefix.size()) == prefix)
        return error(open, std::string(name) + " is not supported");
    }
    if (peek(1) == ':') {
      pos_ += 2;
    } else if (peek(1) == '<') {  // a named group: the name matters only to backreferences
      size_t end = pos_ + 2;
      while (end < p_.size() && p_[end] != '>' &&
             (p_[end] == '_' || p_[end] == '$' || is_digit(p_[end]) ||
              (p_[end] | 0x20) - 'a' < 26u || p_[end] >= 0x80))
        ++end;
      if (end == pos_ + 2 || end >= p_.size() || p_[end] != '>')
        return error(open, "malformed group name after '(?<'");
      pos_ = end + 1;
    } else {
      return error(open, "unsupported group syntax '(?' (only (?:...) and (?<name>...))");
    }
  }
  return disjunction(depth + 1, open);
}

Result<Regex> RegexParser::atom(int depth) {
  const char32_t c = peek();
  if (c == '(') return group(depth);
  if (c == '.') {
    ++pos_;
    return chars(complement(kLineTerminators));
  }
  if (c == '[') {
    Result<CodeSet> set = char_class();
    if (!set) return set.status();
    return chars(std::move(*set));
  }
  if (c == '\\') {
    const size_t at = pos_++;
    if (at_end()) return error(at, "'\\' at the end of the pattern");
    const char32_t e = peek();
    if (e == 'b' || e == 'B')
      return error(at, std::string("word boundary assertion '\\") + static_cast<char>(e) +
                           "' is not supported");
    if (e >= '1' && e <= '9') {
      return error(at, "backreference '\\" + std::string(1, static_cast<char>(e)) +
                           "' is not supported: no grammar can express it");
    }
    if (e == 'k') {
      return error(at,
                   "named backreference '\\k<...>' is not supported: no grammar can "
                   "express it");
    }
    CodeSet set = class_escape(e);
    if (!set.empty()) {
      ++pos_;
      return chars(std::move(set));
    }
    Result<uint32_t> cpt = char_escape(false);
    if (!cpt) return cpt.status();
    return chars({{*cpt, *cpt}});
  }
  ++pos_;  // any other code point stands for itself (']' and '}' too, as ECMA-262 Annex B)
  return chars({{static_cast<uint32_t>(c), static_cast<uint32_t>(c)}});
}

Result<std::pair<uint32_t, uint32_t>> RegexParser::braces() {
  const size_t open = pos_;
  const auto bad = [&] {
    return error(open,
                 "'{' that does not start a quantifier {m}, {m,} or {m,n} (write '\\{' "
                 "for the character)");
  };
  const auto number = [&](uint32_t& out) -> Status {
    uint64_t n = 0;
    const size_t start = pos_;
    while (is_digit(peek())) {
      n = std::min<uint64_t>(n * 10 + (peek() - '0'), uint64_t{kMaxCount} + 1);
      ++pos_;
    }
    if (pos_ == start) return bad();
    if (n > kMaxCount) {
      return error(open, "repetition count above " + std::to_string(kMaxCount) +
                             " (tessera's limit kMaxSchemaCount)");
    }
    out = static_cast<uint32_t>(n);
    return Status::ok();
  };
  ++pos_;
  uint32_t lo = 0, hi = 0;
  TESSERA_RETURN_IF_ERROR(number(lo));
  hi = lo;
  if (peek() == ',') {
    ++pos_;
    hi = kRegexUnbounded;
    if (peek() != '}') TESSERA_RETURN_IF_ERROR(number(hi));
  }
  if (peek() != '}') return bad();
  ++pos_;
  if (hi < lo) return error(open, "repetition {m,n} with m above n");
  return std::make_pair(lo, hi);
}

Result<Regex> RegexParser::quantified(Regex a) {
  uint32_t lo = 1, hi = 1;
  const char32_t c = peek();
  if (c == '*' || c == '+' || c == '?') {
    ++pos_;
    lo = c == '+' ? 1 : 0;
    hi = c == '?' ? 1 : kRegexUnbounded;
  } else if (c == '{') {
    Result<std::pair<uint32_t, uint32_t>> b = braces();
    if (!b) return b.status();
    std::tie(lo, hi) = *b;
  } else {
    return a;
  }
  if (peek() == '?') ++pos_;  // lazy: the same strings
  const char32_t next = peek();
  if (next == '*' || next == '+' || next == '?' || next == '{')
    return error(pos_, std::string("nothing to repeat before '") + static_cast<char>(next) + "'");
  return make_repeat(std::move(a), lo, hi);
}

CodeSet RegexParser::class_escape(char32_t c) const {
  switch (c) {
    case 'd':
      return kDigits;
    case 'D':
      return complement(kDigits);
    case 'w':
      return kWord;
    case 'W':
      return complement(kWord);
    case 's':
      return kSpace;
    case 'S':
      return complement(kSpace);
    default:
      return {};
  }
}

Result<uint32_t> RegexParser::hex_digits(size_t count, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!is_hex(peek())) return error(at, "an escape with too few hex digits");
    v = v * 16 + hex_value(peek());
    ++pos_;
  }
  return v;
}

// At the character after a backslash.
Result<uint32_t> RegexParser::char_escape(bool in_class) {
  const size_t at = pos_ - 1;
  const char32_t c = peek();
  ++pos_;
  switch (c) {
    case 't':
      return uint32_t{0x09};
    case 'n':
      return uint32_t{0x0A};
    case 'v':
      return uint32_t{0x0B};
    case 'f':
      return uint32_t{0x0C};
    case 'r':
      return uint32_t{0x0D};
    case '0':
      if (is_digit(peek())) return error(at, "octal escape '\\0N' is not supported");
      return uint32_t{0};
    case 'c':
      if ((peek() | 0x20) - 'a' < 26u) return static_cast<uint32_t>(p_[pos_++] % 32);
      return error(at, "'\\c' must be followed by a letter");
    case 'x':
      return hex_digits(2, at);
    case 'u':
      return unicode_escape(at);
    default:
      break;
  }
  if (in_class && c == 'b') return uint32_t{0x08};
  if (in_class && c == 'B') return error(at, "'\\B' inside a character class");
  if (c == 'p' || c == 'P') {
    return error(at, std::string("Unicode property escape '\\") + static_cast<char>(c) +
                         "{...}' is not supported");
  }
  if (in_class && is_digit(c))
    return error(at,
                 "octal escape '\\" + std::string(1, static_cast<char>(c)) + "' is not supported");
  if (c < 0x80 && c > 0x20 && c != 0x7F && !is_digit(c) && (c | 0x20) - 'a' >= 26u)
    return static_cast<uint32_t>(c);  // \ before punctuation: the character itself
  std::string shown;
  tok::append_utf8(static_cast<uint32_t>(c), shown);
  return error(at, "unknown escape '\\" + shown + "'");
}

// After "\\u": \u{H...}, or \uHHHH (a surrogate pair \uHHHH\uHHHH is one code point).
Result<uint32_t> RegexParser::unicode_escape(size_t at) {
  if (peek() == '{') {
    ++pos_;
    uint64_t v = 0;
    const size_t start = pos_;
    while (is_hex(peek()) && v <= kMaxCodePoint) v = v * 16 + hex_value(p_[pos_++]);
    if (pos_ == start || peek() != '}' || v > kMaxCodePoint)
      return error(at, "malformed escape '\\u{...}'");
    ++pos_;
    if (v >= 0xD800 && v <= 0xDFFF) return error(at, "a lone surrogate escape is not a character");
    return static_cast<uint32_t>(v);
  }
  Result<uint32_t> v = hex_digits(4, at);
  if (!v) return v;
  if (*v >= 0xD800 && *v <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
    const size_t save = pos_;
    pos_ += 2;
    Result<uint32_t> low = hex_digits(4, at);
    if (low && *low >= 0xDC00 && *low <= 0xDFFF)
      return 0x10000 + ((*v - 0xD800) << 10) + (*low - 0xDC00);
    pos_ = save;
  }
  if (*v >= 0xD800 && *v <= 0xDFFF) return error(at, "a lone surrogate escape is not a character");
  return v;
}

Result<CodeSet> RegexParser::char_class() {
  const size_t open = pos_++;
  const bool negated = peek() == '^';
  if (negated) ++pos_;
  CodeSet set;
  // One class atom: a code point, or a set (class escape) in `escape_set`.
  const auto class_atom = [&](CodeSet& escape_set) -> Result<uint32_t> {
    if (peek() != '\\') return static_cast<uint32_t>(p_[pos_++]);
    ++pos_;
    if (at_end()) return error(open, "unterminated character class '['");
    escape_set = class_escape(peek());
    if (!escape_set.empty()) {
      ++pos_;
      return uint32_t{0};
    }
    if (peek() == 'k')
      return error(pos_ - 1,
                   "named backreference '\\k<...>' is not supported: no grammar can express it");
    return char_escape(true);
  };
  for (;;) {
    if (at_end()) return error(open, "unterminated character class '['");
    if (peek() == ']') break;
    const size_t at = pos_;
    CodeSet lo_set;
    Result<uint32_t> lo = class_atom(lo_set);
    if (!lo) return lo.status();
    if (peek() == '-' && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
      ++pos_;
      CodeSet hi_set;
      Result<uint32_t> hi = class_atom(hi_set);
      if (!hi) return hi.status();
      if (!lo_set.empty() || !hi_set.empty())
        return error(at, "a range with a class escape (\\d \\w \\s ...) in a character class");
      if (*hi < *lo) return error(at, "a range out of order in a character class");
      set.push_back({*lo, *hi});
    } else if (!lo_set.empty()) {
      set.insert(set.end(), lo_set.begin(), lo_set.end());
    } else {
      set.push_back({*lo, *lo});
    }
  }
  ++pos_;  // ']'
  set = normalize(std::move(set));
  return negated ? complement(set) : set;
}

Status RegexParser::spend(size_t nodes) {
  nodes_ += nodes;
  if (nodes_ <= kMaxParts) return Status::ok();
  return Status::error(
      "the pattern is too complex: its repetitions of optional parts would "
      "need more than " +
      std::to_string(kMaxParts) + " parts (tessera's limit kMaxSchemaPatternParts)");
}

Result<Regex> RegexParser::make_repeat(Regex x, uint32_t min, uint32_t max) {
  if (nullable(x)) {  // x{m,n} = (x minus "")^{0..n}: no repeated part matches ""
    Result<Regex> ne = non_empty(x);
    if (!ne) return ne.status();
    x = std::move(*ne);
    min = 0;
  }
  if (max == 0 || x.kind == Regex::Kind::Empty) return of_kind(Regex::Kind::Empty);
  if (x.kind == Regex::Kind::Nothing)
    return of_kind(min == 0 ? Regex::Kind::Empty : Regex::Kind::Nothing);
  if (min == 1 && max == 1) return x;
  Regex r = of_kind(Regex::Kind::Repeat);
  r.min = min;
  r.max = max;
  r.parts.push_back(std::move(x));
  return r;
}

Result<Regex> RegexParser::non_empty(const Regex& r) {
  switch (r.kind) {
    case Regex::Kind::Nothing:
    case Regex::Kind::Empty:
      return of_kind(Regex::Kind::Nothing);
    case Regex::Kind::Chars:
      return r;
    case Regex::Kind::Alt: {
      std::vector<Regex> alts;
      for (const Regex& p : r.parts) {
        Result<Regex> ne = non_empty(p);
        if (!ne) return ne.status();
        alts.push_back(std::move(*ne));
      }
      return make_alt(std::move(alts));
    }
    case Regex::Kind::Seq: {
      if (!nullable(r)) return r;
      // The first part that matches something non-empty, then the rest as they are.
      std::vector<Regex> alts;
      for (size_t i = 0; i < r.parts.size(); ++i) {
        Result<Regex> first = non_empty(r.parts[i]);
        if (!first) return first.status();
        std::vector<Regex> seq = {std::move(*first)};
        for (size_t j = i + 1; j < r.parts.size(); ++j) {
          TESSERA_RETURN_IF_ERROR(spend(tree_size(r.parts[j])));
          seq.push_back(r.parts[j]);
        }
        alts.push_back(make_seq(std::move(seq)));
      }
      return make_alt(std::move(alts));
    }
    case Regex::Kind::Repeat:  // its part is not nullable (make_repeat)
      if (r.min > 0) return r;
      TESSERA_RETURN_IF_ERROR(spend(tree_size(r)));
      return make_repeat(r.parts[0], 1, r.max);
  }
  return r;
}

}  // namespace

CodeSet normalize(CodeSet set) {
  std::sort(set.begin(), set.end(),
            [](const CharRange& a, const CharRange& b) { return a.lo < b.lo; });
  CodeSet out;
  for (const CharRange& r : set) {
    if (!out.empty() && uint64_t{r.lo} <= uint64_t{out.back().hi} + 1) {
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  CodeSet clean;  // without surrogates
  for (const CharRange& r : out) {
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      clean.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) clean.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) clean.push_back({0xE000, r.hi});
  }
  return clean;
}

CodeSet complement(const CodeSet& set) {
  CodeSet out;
  uint32_t next = 0;
  for (const CharRange& r : normalize(set)) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return normalize(std::move(out));
}

uint64_t set_size(const CodeSet& set) {
  uint64_t n = 0;
  for (const CharRange& r : set) n += uint64_t{r.hi} - r.lo + 1;
  return n;
}

Result<std::vector<PatternBranch>> parse_pattern(std::string_view pattern) {
  std::u32string cpts;
  for (size_t pos = 0; pos < pattern.size();) {
    const tok::Utf8Scan scan = tok::scan_utf8(pattern, pos);
    if (scan.kind != tok::Utf8Kind::Valid) return Status::error("the pattern is not valid UTF-8");
    cpts.push_back(static_cast<char32_t>(scan.cpt));
    pos += scan.len;
  }
  return RegexParser(std::move(cpts)).parse();
}

bool nullable(const Regex& r) {
  switch (r.kind) {
    case Regex::Kind::Nothing:
    case Regex::Kind::Chars:
      return false;
    case Regex::Kind::Empty:
      return true;
    case Regex::Kind::Seq:
      return std::all_of(r.parts.begin(), r.parts.end(),
                         [](const Regex& p) { return nullable(p); });
    case Regex::Kind::Alt:
      return std::any_of(r.parts.begin(), r.parts.end(),
                         [](const Regex& p) { return nullable(p); });
    case Regex::Kind::Repeat:
      return r.min == 0 || nullable(r.parts[0]);
  }
  return false;
}

std::pair<uint64_t, uint64_t> length_range(const Regex& r) {
  constexpr uint64_t kInf = kRegexUnbounded;
  const auto add = [](uint64_t a, uint64_t b) {
    return a >= kRegexUnbounded || b >= kRegexUnbounded
               ? uint64_t{kRegexUnbounded}
               : std::min<uint64_t>(a + b, kRegexUnbounded);
  };
  switch (r.kind) {
    case Regex::Kind::Nothing:
      return {1, 0};
    case Regex::Kind::Empty:
      return {0, 0};
    case Regex::Kind::Chars:
      return {1, 1};
    case Regex::Kind::Seq: {
      uint64_t lo = 0, hi = 0;
      for (const Regex& p : r.parts) {
        const auto [plo, phi] = length_range(p);
        lo = add(lo, plo);
        hi = add(hi, phi);
      }
      return {lo, hi};
    }
    case Regex::Kind::Alt: {
      uint64_t lo = kInf, hi = 0;
      for (const Regex& p : r.parts) {
        const auto [plo, phi] = length_range(p);
        if (plo > phi) continue;  // Nothing
        lo = std::min(lo, plo);
        hi = std::max(hi, phi);
      }
      return lo > hi ? std::make_pair(uint64_t{1}, uint64_t{0}) : std::make_pair(lo, hi);
    }
    case Regex::Kind::Repeat: {
      const auto [plo, phi] = length_range(r.parts[0]);
      const uint64_t lo = std::min(plo * r.min, kInf);
      const uint64_t hi = phi == 0                                    ? 0
                          : (r.max == kRegexUnbounded || phi >= kInf) ? kInf
                                                                      : std::min(phi * r.max, kInf);
      return {lo, hi};
    }
  }
  return {0, 0};
}

}  // namespace tessera::grammar::schema
