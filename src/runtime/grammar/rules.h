// A parsed grammar as flat arrays, and the parse stacks that walk it.
//
// Every alternative of every rule is a run of symbols in `Rules::symbols` ending with an
// End symbol. A symbol is a character set (one code point of input) or a reference to a
// rule. A parse stack is a list of positions in `symbols` (the top is last): the top is
// the next character set to match, the positions below are where each enclosing rule
// continues. An empty stack means the input so far is a complete sentence.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::grammar {

/// An inclusive range of code points.
struct CharRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
};

/// A set of code points: the union of `ranges`, or its complement when `negated`.
/// `.` is the negated empty set.
struct CharSet {
  bool negated = false;
  std::vector<CharRange> ranges;

  /// True when `cpt` is in the set.
  bool contains(uint32_t cpt) const {
    bool in = false;
    for (const CharRange& r : ranges) in = in || (r.lo <= cpt && cpt <= r.hi);
    return in != negated;
  }
  /// True when some code point in [lo, hi] is in the set.
  bool intersects(uint32_t lo, uint32_t hi) const;
};

enum class SymbolKind : uint8_t {
  End,    // end of an alternative
  Chars,  // one code point from charsets[index]
  Rule,   // the rule rules[index]
};

struct Symbol {
  SymbolKind kind = SymbolKind::End;
  uint32_t index = 0;
};

/// Why a rule exists: written by the user, or made by the parser for a construct.
enum class RuleOrigin : uint8_t { Named, Group, Repeat };

struct Rule {
  std::string name;
  std::vector<uint32_t> alternatives;  // position in Rules::symbols of each alternative's start
  RuleOrigin origin = RuleOrigin::Named;
  int line = 0;  // where it is defined (generated rules: where the construct is)
  int column = 0;
};

struct Rules {
  std::vector<Symbol> symbols;
  std::vector<CharSet> charsets;
  std::vector<Rule> rules;
  uint32_t root = 0;
};

/// Positions in Rules::symbols, top last; every position holds a Chars symbol.
using Stack = std::vector<uint32_t>;

// Each function below gives its stacks without duplicates, in a fixed order, and none
// (the text is refused) past limits::kMaxGrammarStacks.

/// The stacks of the grammar's start: the expansions of the root rule.
std::vector<Stack> initial_stacks(const Rules& rules);
/// The stacks after the character at the top of `stack` is consumed (any character that
/// matches: the result does not depend on which).
std::vector<Stack> stacks_after_char(const Rules& rules, const Stack& stack);
/// The stacks after code point `cpt`: those of every stack whose top matches it.
std::vector<Stack> advance_stacks(const Rules& rules, const std::vector<Stack>& stacks,
                                  uint32_t cpt);

}  // namespace tessera::grammar
