// The GBNF parser: rules `name ::= alternatives`, `|`, `( )`, `* + ? {m,n}`, string
// literals, character classes, `.`, `#` comments. Groups and repetitions become
// generated rules. A rule ends at the end of its line, except inside parentheses, after
// `::=` or `|`, and when the next line starts with `|`.
#include "runtime/grammar/parser.h"

#include <cstdio>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "tessera/limits.h"
#include "tokenizer/unicode.h"

namespace tessera::grammar {
namespace {

constexpr uint32_t kUnbounded = UINT32_MAX;
constexpr uint32_t kMaxRepeat = limits::kMaxGrammarRepeat;
constexpr int kMaxNesting = limits::kMaxGrammarNesting;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// A rule while the text is read: referenced rules exist before their definition.
struct PendingRule {
  std::string name;
  std::vector<std::vector<Symbol>> alts;
  RuleOrigin origin = RuleOrigin::Named;
  size_t def_pos = 0;  // offset of the definition (generated rules: of the construct)
  bool defined = false;
  size_t first_ref = 0;  // offset of the first reference
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {}
  Result<Rules> run();

 private:
  Status error_at(size_t offset, const std::string& what) const;
  std::pair<int, int> line_column(size_t offset) const;  // 1-based; columns count characters
  std::string where(size_t offset) const;                // "LINE:COLUMN"
  std::string describe_char(size_t offset) const;
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool at_end() const { return pos_ >= text_.size(); }
  void skip_space(bool newlines);
  std::string_view parse_name();
  Result<uint32_t> parse_char(size_t open_pos, const char* construct);
  Result<uint32_t> parse_escape();

  Status parse_rule();
  Status parse_alternatives(bool nested, std::vector<std::vector<Symbol>>& alts);
  Status parse_sequence(bool nested, std::vector<Symbol>& seq);
  Status parse_literal(std::vector<Symbol>& seq);
  Status parse_class(std::vector<Symbol>& seq);
  Status parse_group(std::vector<Symbol>& seq);
  Status parse_repetition(std::vector<Symbol>& seq, size_t last_start);
  Result<std::pair<uint32_t, uint32_t>> parse_braces();
  uint32_t rule_id(std::string_view name, size_t ref_pos);
  uint32_t new_rule(RuleOrigin origin, size_t pos, std::vector<std::vector<Symbol>> alts);
  Symbol char_symbol(uint32_t cpt);
  Symbol set_symbol(CharSet set);
  Result<Rules> finish() const;

  std::string_view text_;
  std::string source_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<PendingRule> rules_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::vector<CharSet> charsets_;
  std::map<uint32_t, uint32_t> single_char_sets_;  // code point -> charset index
};

std::pair<int, int> Parser::line_column(size_t offset) const {
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset && i < text_.size(); ++i) {
    if (text_[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  int column = 1;
  for (size_t i = line_start; i < offset && i < text_.size(); ++i) {
    if ((static_cast<uint8_t>(text_[i]) & 0xC0) != 0x80) ++column;  // count characters
  }
  return {line, column};
}

std::string Parser::where(size_t offset) const {
  const auto [line, column] = line_column(offset);
  return std::to_string(line) + ":" + std::to_string(column);
}

Status Parser::error_at(size_t offset, const std::string& what) const {
  return Status::error(source_ + ":" + where(offset) + ": " + what);
}

std::string Parser::describe_char(size_t offset) const {
  if (offset >= text_.size()) return "the end of the text";
  const char c = text_[offset];
  if (c == '\n') return "the end of the line";
  size_t len = 1;
  if (static_cast<uint8_t>(c) < 0x20 || static_cast<uint8_t>(c) >= 0x7F) {
    const tok::Utf8Scan scan = tok::scan_utf8(text_, offset);
    if (scan.kind != tok::Utf8Kind::Valid || scan.len == 1) {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "byte \\x%02X",
                    static_cast<unsigned>(static_cast<uint8_t>(c)));
      return buf;
    }
    len = scan.len;
  }
  std::string out = "'";
  out.append(text_.substr(offset, len));
  out += '\'';
  return out;
}

void Parser::skip_space(bool newlines) {
  while (!at_end()) {
    const char c = peek();
    if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
      ++pos_;
    } else if (c == '#') {
      while (!at_end() && peek() != '\n') ++pos_;
    } else {
      return;
    }
  }
}

std::string_view Parser::parse_name() {
  const size_t start = pos_;
  while (!at_end() && is_name_char(peek())) ++pos_;
  return text_.substr(start, pos_ - start);
}

Result<uint32_t> Parser::parse_escape() {
  const size_t at = pos_;  // the backslash
  const char kind = peek(1);
  pos_ += 2;
  switch (kind) {
    case 'n':
      return uint32_t{'\n'};
    case 't':
      return uint32_t{'\t'};
    case 'r':
      return uint32_t{'\r'};
    case '\\':
    case '"':
    case '[':
    case ']':
      return static_cast<uint32_t>(kind);
    case 'x':
    case 'u':
    case 'U':
      break;
    default:
      return error_at(at, kind == '\0' || kind == '\n'
                              ? std::string("'\\' at the end of the line")
                              : "unknown escape '\\" + std::string(1, kind) + "'");
  }
  const int digits = kind == 'x' ? 2 : kind == 'u' ? 4 : 8;
  uint32_t value = 0;
  for (int i = 0; i < digits; ++i) {
    const int h = hex_value(peek());
    if (h < 0) {
      return error_at(at, "escape '\\" + std::string(1, kind) + "' needs " +
                              std::to_string(digits) + " hex digits");
    }
    value = value * 16 + static_cast<uint32_t>(h);
    ++pos_;
  }
  if (value > 0x10FFFF)
    return error_at(at,
                    "escape '" + std::string(text_.substr(at, pos_ - at)) + "' is beyond U+10FFFF");
  return value;
}

Result<uint32_t> Parser::parse_char(size_t open_pos, const char* construct) {
  if (at_end() || peek() == '\n') {
    return error_at(open_pos, std::string("unterminated ") + construct);
  }
  if (peek() == '\\') return parse_escape();
  const tok::Utf8Scan scan = tok::scan_utf8(text_, pos_);
  if (scan.kind != tok::Utf8Kind::Valid) return error_at(pos_, "invalid UTF-8");
  pos_ += scan.len;
  return scan.cpt;
}

Symbol Parser::char_symbol(uint32_t cpt) {
  auto [it, fresh] = single_char_sets_.try_emplace(cpt, static_cast<uint32_t>(charsets_.size()));
  if (fresh) charsets_.push_back(CharSet{false, {{cpt, cpt}}});
  return Symbol{SymbolKind::Chars, it->second};
}

Symbol Parser::set_symbol(CharSet set) {
  charsets_.push_back(std::move(set));
  return Symbol{SymbolKind::Chars, static_cast<uint32_t>(charsets_.size() - 1)};
}

uint32_t Parser::rule_id(std::string_view name, size_t ref_pos) {
  auto [it, fresh] = by_name_.try_emplace(std::string(name), static_cast<uint32_t>(rules_.size()));
  if (fresh) {
    PendingRule r;
    r.name = std::string(name);
    r.first_ref = ref_pos;
    rules_.push_back(std::move(r));
  }
  return it->second;
}

uint32_t Parser::new_rule(RuleOrigin origin, size_t pos, std::vector<std::vector<Symbol>> alts) {
  PendingRule r;
  r.name = std::string(origin == RuleOrigin::Group ? "(group at " : "(repetition at ") +
           where(pos) + ")";
  r.alts = std::move(alts);
  r.origin = origin;
  r.def_pos = pos;
  r.defined = true;
  rules_.push_back(std::move(r));
  return static_cast<uint32_t>(rules_.size() - 1);
}

Status Parser::parse_literal(std::vector<Symbol>& seq) {
  const size_t open = pos_++;
  while (peek() != '"') {  // parse_char reports the end of the text or line
    Result<uint32_t> c = parse_char(open, "string (missing '\"')");
    if (!c) return c.status();
    seq.push_back(char_symbol(*c));
  }
  ++pos_;
  return Status::ok();
}

Status Parser::parse_class(std::vector<Symbol>& seq) {
  const size_t open = pos_++;
  CharSet set;
  if (peek() == '^') {
    set.negated = true;
    ++pos_;
  }
  const char* what = "character class (missing ']')";
  while (peek() != ']') {
    const size_t lo_pos = pos_;
    Result<uint32_t> lo = parse_char(open, what);
    if (!lo) return lo.status();
    uint32_t hi = *lo;
    if (peek() == '-' && peek(1) != ']' && peek(1) != '\0') {
      ++pos_;
      Result<uint32_t> h = parse_char(open, what);
      if (!h) return h.status();
      hi = *h;
      if (hi < *lo) {
        return error_at(lo_pos, "range '" + std::string(text_.substr(lo_pos, pos_ - lo_pos)) +
                                    "' is backwards");
      }
    }
    set.ranges.push_back({*lo, hi});
  }
  ++pos_;
  seq.push_back(set_symbol(std::move(set)));
  return Status::ok();
}

Status Parser::parse_group(std::vector<Symbol>& seq) {
  const size_t open = pos_++;
  if (++depth_ > kMaxNesting)
    return error_at(open, "groups nested deeper than " + std::to_string(kMaxNesting) + " (tessera's limit kMaxGrammarNesting)");
  skip_space(true);
  std::vector<std::vector<Symbol>> alts;
  TESSERA_RETURN_IF_ERROR(parse_alternatives(true, alts));
  if (at_end()) return error_at(open, "'(' is never closed");
  if (peek() != ')') {
    return error_at(
        pos_, "expected ')' to close the '(' at " + where(open) + ", found " + describe_char(pos_));
  }
  ++pos_;
  --depth_;
  seq.push_back(Symbol{SymbolKind::Rule, new_rule(RuleOrigin::Group, open, std::move(alts))});
  return Status::ok();
}

Result<std::pair<uint32_t, uint32_t>> Parser::parse_braces() {
  const size_t open = pos_++;
  const auto skip_blanks = [&] {
    while (peek() == ' ' || peek() == '\t') ++pos_;
  };
  const auto number = [&](bool& present) -> Result<uint32_t> {
    uint64_t v = 0;
    present = false;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<uint64_t>(peek() - '0');
      if (v > kMaxRepeat)
        return error_at(open, "repetition count above " + std::to_string(kMaxRepeat) + " (tessera's limit kMaxGrammarRepeat)");
      present = true;
      ++pos_;
    }
    return static_cast<uint32_t>(v);
  };
  bool has_min = false, has_max = false;
  skip_blanks();
  Result<uint32_t> lo = number(has_min);
  if (!lo) return lo.status();
  skip_blanks();
  uint32_t hi = *lo;
  bool comma = false;
  if (peek() == ',') {
    comma = true;
    ++pos_;
    skip_blanks();
    Result<uint32_t> h = number(has_max);
    if (!h) return h.status();
    hi = has_max ? *h : kUnbounded;
    skip_blanks();
  }
  if (peek() != '}') {
    return error_at(open, "unterminated repetition '{' (expected {m}, {m,}, {,n} or {m,n})");
  }
  ++pos_;
  if (!has_min && !(comma && has_max)) return error_at(open, "repetition '{...}' without a count");
  if (hi < *lo) {
    return error_at(open, "repetition " + std::string(text_.substr(open, pos_ - open)) +
                              ": the maximum is below the minimum");
  }
  return std::make_pair(*lo, hi);
}

Status Parser::parse_repetition(std::vector<Symbol>& seq, size_t last_start) {
  const size_t op = pos_;
  uint32_t lo = 0, hi = kUnbounded;
  switch (peek()) {
    case '*':
      ++pos_;
      break;
    case '+':
      ++pos_;
      lo = 1;
      break;
    case '?':
      ++pos_;
      hi = 1;
      break;
    default: {
      Result<std::pair<uint32_t, uint32_t>> b = parse_braces();
      if (!b) return b.status();
      std::tie(lo, hi) = *b;
    }
  }
  const std::vector<Symbol> elem(seq.begin() + static_cast<std::ptrdiff_t>(last_start), seq.end());
  seq.resize(last_start);
  for (uint32_t i = 0; i < lo; ++i) seq.insert(seq.end(), elem.begin(), elem.end());
  if (hi == kUnbounded) {  // star ::= elem star | (empty)
    const uint32_t star = new_rule(RuleOrigin::Repeat, op, {});
    std::vector<Symbol> again = elem;
    again.push_back(Symbol{SymbolKind::Rule, star});
    rules_[star].alts = {std::move(again), {}};
    seq.push_back(Symbol{SymbolKind::Rule, star});
  } else if (hi > lo) {  // opt_k ::= elem opt_{k-1} | (empty); opt_1 ::= elem | (empty)
    uint32_t inner = new_rule(RuleOrigin::Repeat, op, {elem, {}});
    for (uint32_t k = 2; k <= hi - lo; ++k) {
      std::vector<Symbol> more = elem;
      more.push_back(Symbol{SymbolKind::Rule, inner});
      inner = new_rule(RuleOrigin::Repeat, op, {std::move(more), {}});
    }
    seq.push_back(Symbol{SymbolKind::Rule, inner});
  }
  return Status::ok();
}

Status Parser::parse_sequence(bool nested, std::vector<Symbol>& seq) {
  size_t last_start = SIZE_MAX;  // where the last element's symbols begin
  for (;;) {
    const char c = peek();
    const size_t start = seq.size();
    if (at_end()) return Status::ok();
    if (c == '"') {
      TESSERA_RETURN_IF_ERROR(parse_literal(seq));
    } else if (c == '[') {
      TESSERA_RETURN_IF_ERROR(parse_class(seq));
    } else if (c == '.') {
      ++pos_;
      seq.push_back(set_symbol(CharSet{true, {}}));
    } else if (c == '(') {
      TESSERA_RETURN_IF_ERROR(parse_group(seq));
    } else if (is_name_char(c)) {
      const size_t at = pos_;
      seq.push_back(Symbol{SymbolKind::Rule, rule_id(parse_name(), at)});
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      if (last_start == SIZE_MAX)
        return error_at(pos_, std::string("'") + c + "' must follow an expression");
      TESSERA_RETURN_IF_ERROR(parse_repetition(seq, last_start));
      skip_space(nested);
      continue;
    } else {
      return Status::ok();  // '|', ')', end of line or something the caller reports
    }
    last_start = start;
    skip_space(nested);
  }
}

Status Parser::parse_alternatives(bool nested, std::vector<std::vector<Symbol>>& alts) {
  alts.emplace_back();
  TESSERA_RETURN_IF_ERROR(parse_sequence(nested, alts.back()));
  for (;;) {
    if (peek() != '|' && !nested && peek() == '\n') {
      const size_t line_end = pos_;  // a following line that starts with '|' continues
      skip_space(true);
      if (peek() != '|') {
        pos_ = line_end;
        return Status::ok();
      }
    }
    if (peek() != '|') return Status::ok();
    ++pos_;
    skip_space(true);
    alts.emplace_back();
    TESSERA_RETURN_IF_ERROR(parse_sequence(nested, alts.back()));
  }
}

Status Parser::parse_rule() {
  const size_t start = pos_;
  const std::string name(parse_name());
  if (name.empty()) return error_at(pos_, "expected a rule name, found " + describe_char(pos_));
  skip_space(false);
  if (text_.substr(pos_, 3) != "::=") {
    return error_at(
        pos_, "expected '::=' after the rule name '" + name + "', found " + describe_char(pos_));
  }
  pos_ += 3;
  skip_space(true);
  std::vector<std::vector<Symbol>> alts;
  TESSERA_RETURN_IF_ERROR(parse_alternatives(false, alts));
  if (!at_end() && peek() != '\n') {
    if (peek() == ')') return error_at(pos_, "unexpected ')' (no '(' is open)");
    return error_at(pos_, "unexpected " + describe_char(pos_) + " in rule '" + name + "'");
  }
  const uint32_t id = rule_id(name, start);
  if (rules_[id].defined) {
    return error_at(
        start, "rule '" + name + "' is defined twice (first at " + where(rules_[id].def_pos) + ")");
  }
  rules_[id].alts = std::move(alts);
  rules_[id].defined = true;
  rules_[id].def_pos = start;
  return Status::ok();
}

Result<Rules> Parser::run() {
  skip_space(true);
  while (!at_end()) {
    TESSERA_RETURN_IF_ERROR(parse_rule());
    skip_space(true);
  }
  return finish();
}

Result<Rules> Parser::finish() const {
  const PendingRule* undefined = nullptr;
  for (const PendingRule& r : rules_) {
    if (!r.defined && (!undefined || r.first_ref < undefined->first_ref)) undefined = &r;
  }
  if (undefined) return error_at(undefined->first_ref, "undefined rule '" + undefined->name + "'");
  const auto root = by_name_.find("root");
  if (root == by_name_.end())
    return error_at(0, "no 'root' rule (generation starts at the rule named root)");

  Rules out;
  out.charsets = charsets_;
  out.root = root->second;
  for (const PendingRule& r : rules_) {
    Rule rule;
    rule.name = r.name;
    rule.origin = r.origin;
    std::tie(rule.line, rule.column) = line_column(r.def_pos);
    for (const std::vector<Symbol>& alt : r.alts) {
      rule.alternatives.push_back(static_cast<uint32_t>(out.symbols.size()));
      out.symbols.insert(out.symbols.end(), alt.begin(), alt.end());
      out.symbols.push_back(Symbol{SymbolKind::End, 0});
    }
    out.rules.push_back(std::move(rule));
  }
  TESSERA_RETURN_IF_ERROR(check_left_recursion(out, source_));
  return out;
}

}  // namespace

Result<Rules> parse_gbnf(std::string_view text, std::string_view source) {
  Parser parser(text, source);
  return parser.run();
}

}  // namespace tessera::grammar
