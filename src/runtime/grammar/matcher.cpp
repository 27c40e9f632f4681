// Grammar (parse + builtins lookup) and GrammarMatcher (stacks over code points).
#include <algorithm>

#include "runtime/grammar/builtin.h"
#include "runtime/grammar/matcher_state.h"
#include "runtime/grammar/parser.h"
#include "tessera/limits.h"
#include "tokenizer/unicode.h"

namespace tessera {
namespace grammar {

PartialRange partial_range(std::string_view prefix) {
  const auto lead = static_cast<uint8_t>(prefix[0]);
  const size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  uint32_t value = lead & (len == 4 ? 0x07u : len == 3 ? 0x0Fu : 0x1Fu);
  for (size_t i = 1; i < prefix.size(); ++i)
    value = (value << 6) | (static_cast<uint8_t>(prefix[i]) & 0x3Fu);
  const size_t missing_bits = 6 * (len - prefix.size());
  PartialRange r{value << missing_bits, (value << missing_bits) | ((1u << missing_bits) - 1)};
  const uint32_t min_for_len = len == 4 ? 0x10000 : len == 3 ? 0x800 : 0x80;
  r.lo = std::max(r.lo, min_for_len);
  r.hi = std::min(r.hi, 0x10FFFFu);
  return r;
}

bool partial_fits(const Rules& rules, const Stack& stack, const PartialRange& range) {
  if (stack.empty()) return false;
  return rules.charsets[rules.symbols[stack.back()].index].intersects(range.lo, range.hi);
}

bool decode_utf8(std::string_view bytes, std::vector<uint32_t>& cpts, std::string& partial) {
  partial.clear();
  for (size_t pos = 0; pos < bytes.size();) {
    const tok::Utf8Scan scan = tok::scan_utf8(bytes, pos);
    if (scan.kind == tok::Utf8Kind::Invalid) return false;
    if (scan.kind == tok::Utf8Kind::Truncated) {
      partial.assign(bytes.substr(pos));
      return true;
    }
    cpts.push_back(scan.cpt);
    pos += scan.len;
  }
  return true;
}

}  // namespace grammar

// ---- Grammar -------------------------------------------------------------------------

Grammar::Grammar(std::unique_ptr<const grammar::Rules> rules) : rules_(std::move(rules)) {}
Grammar::~Grammar() = default;

Result<std::shared_ptr<const Grammar>> Grammar::parse(std::string_view text,
                                                      std::string_view source) {
  Result<grammar::Rules> rules = grammar::parse_gbnf(text, source);
  if (!rules) return rules.status();
  // The root has at least one alternative, so its start has at least one stack: none
  // means the expansion went past the limit, and such a grammar could accept nothing.
  if (grammar::initial_stacks(*rules).empty()) {
    return Status::error(std::string(source) + ": the grammar is too ambiguous: its start has more than " +
                         std::to_string(limits::kMaxGrammarStacks) +
                         " parse stacks (tessera's limit kMaxGrammarStacks)");
  }
  auto owned = std::make_unique<const grammar::Rules>(std::move(rules).value());
  return std::shared_ptr<const Grammar>(new Grammar(std::move(owned)));
}

std::string_view Grammar::builtin(std::string_view name) {
  for (const grammar::BuiltinGrammar& g : grammar::builtin_grammars()) {
    if (g.name == name) return g.text;
  }
  return {};
}

std::vector<std::string> Grammar::builtin_names() {
  std::vector<std::string> names;
  for (const grammar::BuiltinGrammar& g : grammar::builtin_grammars()) names.emplace_back(g.name);
  std::sort(names.begin(), names.end());
  return names;
}

size_t Grammar::n_rules() const { return rules_->rules.size(); }

// ---- GrammarMatcher ------------------------------------------------------------------

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)), state_(std::make_unique<State>()) {
  reset();
}

GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(const GrammarMatcher& other)
    : grammar_(other.grammar_), state_(std::make_unique<State>(*other.state_)) {}
GrammarMatcher& GrammarMatcher::operator=(const GrammarMatcher& other) {
  grammar_ = other.grammar_;
  *state_ = *other.state_;
  return *this;
}

void GrammarMatcher::reset() {
  state_->stacks = grammar::initial_stacks(grammar_->rules());
  state_->pending.clear();
}

bool GrammarMatcher::accept_codepoint(uint32_t cpt) {
  if (!state_->pending.empty()) return false;  // in the middle of a character
  std::vector<grammar::Stack> next =
      grammar::advance_stacks(grammar_->rules(), state_->stacks, cpt);
  if (next.empty()) return false;
  state_->stacks = std::move(next);
  return true;
}

bool GrammarMatcher::accept_text(std::string_view bytes) {
  std::vector<uint32_t> cpts;
  std::string partial;
  if (!grammar::decode_utf8(state_->pending + std::string(bytes), cpts, partial)) return false;
  const grammar::Rules& rules = grammar_->rules();
  std::vector<grammar::Stack> stacks = state_->stacks;
  for (const uint32_t cpt : cpts) {
    stacks = grammar::advance_stacks(rules, stacks, cpt);
    if (stacks.empty()) return false;
  }
  if (!partial.empty()) {
    const grammar::PartialRange range = grammar::partial_range(partial);
    const bool fits = std::any_of(stacks.begin(), stacks.end(), [&](const grammar::Stack& s) {
      return grammar::partial_fits(rules, s, range);
    });
    if (!fits) return false;
  }
  state_->stacks = std::move(stacks);
  state_->pending = std::move(partial);
  return true;
}

bool GrammarMatcher::can_end() const {
  if (!state_->pending.empty()) return false;
  return std::any_of(state_->stacks.begin(), state_->stacks.end(),
                     [](const grammar::Stack& s) { return s.empty(); });
}

bool GrammarMatcher::is_complete() const {
  if (!state_->pending.empty()) return false;
  return std::all_of(state_->stacks.begin(), state_->stacks.end(),
                     [](const grammar::Stack& s) { return s.empty(); });
}

}  // namespace tessera
