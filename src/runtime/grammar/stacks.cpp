// Parse stacks: expansion of rule references and advancing over one code point.
#include <algorithm>

#include "core/check.h"
#include "runtime/grammar/rules.h"

namespace tessera::grammar {

bool CharSet::intersects(uint32_t lo, uint32_t hi) const {
  if (!negated) {
    for (const CharRange& r : ranges) {
      if (r.lo <= hi && lo <= r.hi) return true;
    }
    return false;
  }
  // Negated: some point of [lo, hi] escapes every range. Walk up from lo past the
  // ranges that cover it.
  uint32_t at = lo;
  bool moved = true;
  while (moved) {
    moved = false;
    for (const CharRange& r : ranges) {
      if (r.lo <= at && at <= r.hi) {
        if (r.hi >= hi) return false;
        at = r.hi + 1;
        moved = true;
      }
    }
  }
  return true;
}

void expand_stack(const Rules& rules, Stack stack, std::vector<Stack>& out) {
  if (!stack.empty()) {
    const uint32_t top = stack.back();
    const Symbol& sym = rules.symbols[top];
    TESSERA_CHECK(sym.kind != SymbolKind::End);
    if (sym.kind == SymbolKind::Rule) {
      stack.pop_back();
      if (rules.symbols[top + 1].kind != SymbolKind::End) stack.push_back(top + 1);
      for (const uint32_t start : rules.rules[sym.index].alternatives) {
        Stack next = stack;
        if (rules.symbols[start].kind != SymbolKind::End) next.push_back(start);
        expand_stack(rules, std::move(next), out);
      }
      return;
    }
  }
  if (std::find(out.begin(), out.end(), stack) == out.end()) out.push_back(std::move(stack));
}

std::vector<Stack> initial_stacks(const Rules& rules) {
  std::vector<Stack> out;
  for (const uint32_t start : rules.rules[rules.root].alternatives) {
    Stack stack;
    if (rules.symbols[start].kind != SymbolKind::End) stack.push_back(start);
    expand_stack(rules, std::move(stack), out);
  }
  return out;
}

std::vector<Stack> stacks_after_char(const Rules& rules, const Stack& stack) {
  TESSERA_CHECK(!stack.empty());
  Stack next(stack.begin(), stack.end() - 1);
  const uint32_t top = stack.back();
  if (rules.symbols[top + 1].kind != SymbolKind::End) next.push_back(top + 1);
  std::vector<Stack> out;
  expand_stack(rules, std::move(next), out);
  return out;
}

std::vector<Stack> advance_stacks(const Rules& rules, const std::vector<Stack>& stacks,
                                  uint32_t cpt) {
  std::vector<Stack> out;
  for (const Stack& stack : stacks) {
    if (stack.empty()) continue;
    const Symbol& sym = rules.symbols[stack.back()];
    if (!rules.charsets[sym.index].contains(cpt)) continue;
    for (Stack& s : stacks_after_char(rules, stack)) {
      if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace tessera::grammar
