// The keywords `pattern` and `format` of strings as GBNF. A pattern's tree (json_schema_
// regex.h) is written as the JSON text of the strings it matches, each character written
// one way, as JSON.stringify writes it: raw, or \" \\ \b \f \n \r \t, or \u00xx (lower
// case) for the other control characters. A side that `^` / `$` does not anchor gets any
// characters, as JSON Schema's unanchored search means.
#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include "runtime/grammar/json_schema_compiler.h"
#include "runtime/grammar/json_schema_formats.h"
#include "runtime/grammar/json_schema_regex.h"
#include "tokenizer/unicode.h"

namespace tessera::grammar::schema {
namespace {

constexpr uint64_t kUnbounded = UINT64_MAX;

/// Code point `c` as JSON string text.
std::string json_char(uint32_t c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case 0x08:
      return "\\b";
    case 0x0C:
      return "\\f";
    case 0x0A:
      return "\\n";
    case 0x0D:
      return "\\r";
    case 0x09:
      return "\\t";
    default:
      break;
  }
  if (c < 0x20) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\u%04x", c);
    return buf;
  }
  std::string out;
  tok::append_utf8(c, out);
  return out;
}

bool contains(const CodeSet& set, uint32_t c) {
  return std::any_of(set.begin(), set.end(),
                     [&](const CharRange& r) { return r.lo <= c && c <= r.hi; });
}

CodeSet intersect(const CodeSet& a, const CodeSet& b) {
  CodeSet both = complement(a);
  const CodeSet cb = complement(b);
  both.insert(both.end(), cb.begin(), cb.end());
  return complement(both);
}

std::string class_ranges(const CodeSet& set) {
  std::string out;
  for (const CharRange& r : set) {
    out += gbnf_class_char(r.lo);
    if (r.hi == r.lo) continue;
    if (r.hi != r.lo + 1) out += '-';
    out += gbnf_class_char(r.hi);
  }
  return out;
}

std::string repeat_suffix(uint32_t min, uint32_t max) {
  if (max == kRegexUnbounded && min <= 1) return min == 0 ? "*" : "+";
  if (min == 0 && max == 1) return "?";
  std::string out = "{";  // appended piece by piece: GCC 12 warns (-Wrestrict) on "{" + ...
  out += std::to_string(min);
  if (max != min) {
    out += ',';
    if (max != kRegexUnbounded) out += std::to_string(max);
  }
  out += '}';
  return out;
}

/// "[" ranges "]", or "[^" ranges "]".
std::string char_class(const CodeSet& set, bool negated) {
  std::string out = negated ? "[^" : "[";
  out += class_ranges(set);
  out += ']';
  return out;
}

/// Writes a pattern's tree as GBNF; character sets that need several alternatives become
/// rules of their own, one per distinct set.
class PatternWriter {
 public:
  PatternWriter(GbnfWriter& w, std::string name) : w_(w), name_(std::move(name)) {}

  /// GBNF for `r`; `atomic`: one element that a repetition may follow.
  std::string expr(const Regex& r, bool atomic);
  std::string any() { return w_.use("pattern-char"); }
  /// The rules the GBNF parser will make for the groups and repetitions written.
  size_t cost() const { return cost_; }
  bool over_budget() const { return over_budget_; }

 private:
  std::string chars(const CodeSet& set);

  GbnfWriter& w_;
  std::string name_;
  size_t cost_ = 0;
  bool over_budget_ = false;
  std::map<std::string, std::string> set_rules_;  // body -> rule
};

std::string PatternWriter::chars(const CodeSet& set) {
  if (complement(set).empty()) return any();
  if (set_size(set) == 1) return gbnf_literal(json_char(set[0].lo));
  const CodeSet raw = intersect(set, complement({{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}}));
  std::vector<std::string> alts;
  if (!raw.empty()) {
    const std::string pos = char_class(raw, false);
    const std::string neg = char_class(complement(raw), true);
    alts.push_back(neg.size() < pos.size() ? neg : pos);
  }
  for (const uint32_t c : {uint32_t{'"'}, uint32_t{'\\'}}) {
    if (contains(set, c)) alts.push_back(gbnf_literal(json_char(c)));
  }
  std::string short_escapes, low, high;  // \b \f \n \r \t; \u000x; \u001x
  for (uint32_t c = 0; c < 0x20; ++c) {
    if (!contains(set, c)) continue;
    const std::string text = json_char(c);
    if (text.size() == 2)
      short_escapes += text[1];
    else
      (c < 0x10 ? low : high) += text.back();
  }
  if (!short_escapes.empty()) alts.push_back(R"("\\" [)" + short_escapes + "]");
  if (!low.empty()) alts.push_back(R"("\\u000" [)" + low + "]");
  if (!high.empty()) alts.push_back(R"("\\u001" [)" + high + "]");
  if (alts.size() == 1 && alts[0][0] == '[') return alts[0];
  std::string body;
  for (const std::string& a : alts) body += (body.empty() ? "" : " | ") + a;
  if (const auto it = set_rules_.find(body); it != set_rules_.end()) return it->second;
  const std::string name = w_.reserve(name_ + "-chars");
  if (!w_.define(name, body)) over_budget_ = true;
  set_rules_.emplace(body, name);
  return name;
}

std::string PatternWriter::expr(const Regex& r, bool atomic) {
  const auto wrap = [&](const std::string& e) {
    ++cost_;
    return "( " + e + " )";
  };
  switch (r.kind) {
    case Regex::Kind::Nothing:  // removed before writing; never matches
    case Regex::Kind::Empty:
      return "\"\"";
    case Regex::Kind::Chars:
      return chars(r.chars);
    case Regex::Kind::Seq: {
      std::vector<std::string> items;
      std::string literal;  // JSON text of single characters in a row
      for (const Regex& p : r.parts) {
        if (p.kind == Regex::Kind::Chars && set_size(p.chars) == 1) {
          literal += json_char(p.chars[0].lo);
          continue;
        }
        if (!literal.empty()) items.push_back(gbnf_literal(std::exchange(literal, std::string())));
        items.push_back(expr(p, p.kind == Regex::Kind::Alt));
      }
      if (!literal.empty()) items.push_back(gbnf_literal(literal));
      std::string out;
      for (const std::string& i : items) out += (out.empty() ? "" : " ") + i;
      return atomic && items.size() > 1 ? wrap(out) : out;
    }
    case Regex::Kind::Alt: {
      std::string out;
      for (const Regex& p : r.parts) out += (out.empty() ? "" : " | ") + expr(p, false);
      return atomic ? wrap(out) : out;
    }
    case Regex::Kind::Repeat: {
      const Regex& part = r.parts[0];
      std::string inner = expr(part, true);
      if (part.kind == Regex::Kind::Repeat) inner = wrap(inner);
      cost_ += r.max == kRegexUnbounded ? 1 : r.max - r.min + 1;
      const std::string out = inner + repeat_suffix(r.min, r.max);
      return atomic ? wrap(out) : out;
    }
  }
  return "\"\"";
}

/// The one repetition of a character set whose count alone makes the lengths of a
/// branch's strings vary, and the length of the rest; null when there is none.
Regex* variable_part(Regex& body, uint64_t& fixed) {
  const auto is_set_repeat = [](const Regex& r) {
    return r.kind == Regex::Kind::Repeat && r.parts[0].kind == Regex::Kind::Chars;
  };
  fixed = 0;
  if (is_set_repeat(body)) return &body;
  if (body.kind != Regex::Kind::Seq) return nullptr;
  Regex* found = nullptr;
  for (Regex& p : body.parts) {
    const auto [lo, hi] = length_range(p);
    if (lo == hi) {
      fixed += lo;
    } else if (!found && is_set_repeat(p)) {
      found = &p;
    } else {
      return nullptr;
    }
  }
  return found;
}

}  // namespace

Status Compiler::fit_lengths(std::vector<PatternBranch>& branches, const Json& s, uint64_t lo,
                             uint64_t hi, const std::string& ptr, const std::string& what) const {
  if (lo == 0 && hi == kUnbounded) return Status::ok();
  uint64_t shortest = kUnbounded, longest = 0;
  for (const PatternBranch& b : branches) {
    auto [blo, bhi] = length_range(b.body);
    if (blo > bhi) continue;  // matches nothing
    if (!b.at_start || !b.at_end) bhi = kUnbounded;
    shortest = std::min(shortest, blo);
    longest = std::max(longest, bhi == kRegexUnbounded ? kUnbounded : bhi);
  }
  if (shortest >= lo && longest <= hi) return Status::ok();  // the lengths add nothing
  const std::string keywords = s.contains("minLength") && s.contains("maxLength")
                                   ? "'minLength' and 'maxLength'"
                               : s.contains("minLength") ? "'minLength'"
                                                         : "'maxLength'";
  if (shortest > hi || longest < lo)
    return schema_error(ptr, keywords + " and " + what + ": no string matches both");
  uint64_t fixed = 0;
  Regex* part = branches.size() == 1 && branches[0].at_start && branches[0].at_end
                    ? variable_part(branches[0].body, fixed)
                    : nullptr;
  if (!part) {
    return schema_error(ptr,
                        keywords + " beside " + what +
                            " cannot be combined in one grammar: only "
                            "when every string the pattern matches meets them, or when its only "
                            "part of varying length is one repeated character class");
  }
  const uint64_t min = std::max<uint64_t>(part->min, lo > fixed ? lo - fixed : 0);
  const uint64_t max = hi == kUnbounded ? part->max
                       : hi < fixed     ? 0
                                        : std::min<uint64_t>(part->max, hi - fixed);
  if (hi < fixed || min > max)
    return schema_error(ptr, keywords + " and " + what + ": no string matches both");
  part->min = static_cast<uint32_t>(min);
  part->max = static_cast<uint32_t>(max);
  if (part->max == 0) *part = Regex{};  // the empty string
  return Status::ok();
}

Result<std::string> Compiler::compile_pattern(const Json& s, uint64_t lo, uint64_t hi,
                                              const std::string& ptr, const std::string& hint) {
  if (!s["pattern"].is_string()) return schema_error(ptr, "'pattern' must be a string");
  const std::string what = "'pattern' " + s["pattern"].dump();
  Result<std::vector<PatternBranch>> branches = parse_pattern(s["pattern"].get<std::string>());
  if (!branches) return schema_error(ptr, what + ": " + branches.status().message());
  TESSERA_RETURN_IF_ERROR(fit_lengths(*branches, s, lo, hi, ptr, what));
  const std::string name = rule_name(hint);
  PatternWriter writer(w_, name);
  std::vector<std::string> alts;
  for (const PatternBranch& b : *branches) {
    if (b.body.kind == Regex::Kind::Nothing) continue;
    if (nullable(b.body) && (!b.at_start || !b.at_end)) {  // "" is a prefix or suffix of all
      alts.push_back(writer.any() + "*");
      continue;
    }
    std::string text = b.at_start ? "" : writer.any() + "* ";
    text += writer.expr(b.body, b.body.kind == Regex::Kind::Alt);
    if (!b.at_end) {
      text += ' ';
      text += writer.any();
      text += '*';
    }
    alts.push_back(text);
  }
  if (alts.empty()) return schema_error(ptr, what + " matches no string");
  TESSERA_RETURN_IF_ERROR(charge(writer.cost(), ptr));
  if (writer.over_budget()) TESSERA_RETURN_IF_ERROR(charge(kMaxRules, ptr));  // the budget error
  std::string body;
  for (const std::string& a : alts) body += (body.empty() ? "" : " | ") + a;
  if (alts.size() > 1) body = "( " + body + " )";
  return define(name, R"("\"" )" + body + R"( "\"")", ptr);
}

Result<std::string> Compiler::compile_format(const Json& s, const StringFormat& format, uint64_t lo,
                                             uint64_t hi, const std::string& ptr) {
  if (format.min_length < lo || format.max_length > hi) {
    const std::string keywords = s.contains("minLength") && s.contains("maxLength")
                                     ? "'minLength' and 'maxLength'"
                                 : s.contains("minLength") ? "'minLength'"
                                                           : "'maxLength'";
    const bool disjoint = format.max_length < lo || format.min_length > hi;
    return schema_error(ptr, keywords + " beside 'format' \"" + format.name + "\" (strings of " +
                                 std::to_string(format.min_length) + " to " +
                                 std::to_string(format.max_length) + " characters): " +
                                 (disjoint ? "no string matches both"
                                           : "cannot be combined in one grammar unless every such "
                                             "string meets them"));
  }
  return w_.use(format.rule);
}

}  // namespace tessera::grammar::schema
