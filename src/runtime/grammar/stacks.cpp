// Parse stacks: expansion of rule references and advancing over one code point.
#include <algorithm>
#include <atomic>
#include <unordered_set>

#include "core/check.h"
#include "runtime/grammar/rules.h"
#include "tessera/limits.h"
#include "tessera/log.h"

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

namespace {

struct StackHash {
  size_t operator()(const Stack& s) const {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
    for (const uint32_t v : s) h = (h ^ v) * 0x100000001B3ull;
    return size_t(h ^ (h >> 29));
  }
};

/// Stacks without duplicates, in the order first added. Past a few stacks a hash set
/// makes each add cost the stack's depth rather than a scan of every stack so far: an
/// ambiguous grammar such as `item ::= "- "?{1,200}` has hundreds of stacks per character
/// (the grammar fuzzer's first timeout: 23 s for 30 characters with the scan). Past
/// kMaxGrammarStacks the set is marked full and the text is refused (a warning names it).
class StackSet {
 public:
  void add(Stack s) {
    if (full_) return;
    if (list_.size() < kScanUpTo) {
      if (std::find(list_.begin(), list_.end(), s) != list_.end()) return;
    } else {
      if (seen_.empty()) seen_.insert(list_.begin(), list_.end());
      if (!seen_.insert(s).second) return;
    }
    if (list_.size() >= size_t(limits::kMaxGrammarStacks)) {
      full_ = true;
      return;
    }
    list_.push_back(std::move(s));
  }
  bool full() const { return full_; }
  /// The stacks; none when the set went past the limit.
  std::vector<Stack> take() {
    if (full_) {
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true)) {
        log(LogLevel::Warn, "grammar: more than %d parse stacks at one character (tessera's limit "
                            "kMaxGrammarStacks): the grammar is too ambiguous, the text is refused",
            limits::kMaxGrammarStacks);
      }
      return {};
    }
    return std::move(list_);
  }

 private:
  static constexpr size_t kScanUpTo = 16;  // real grammars: a scan of a few stacks is cheapest
  std::vector<Stack> list_;
  std::unordered_set<Stack, StackHash> seen_;  // filled once list_ has kScanUpTo stacks
  bool full_ = false;
};

/// Adds to `out` every stack that `stack` expands to: while the top is a rule reference,
/// it is replaced by the start of each alternative (an empty alternative continues with
/// what follows the reference). Needs a grammar without left recursion (the parser
/// rejects it).
void expand_stack(const Rules& rules, Stack stack, StackSet& out) {
  if (out.full()) return;  // the result is refused anyway: stop recursing
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
  out.add(std::move(stack));
}

/// Adds the stacks after the character at the top of `stack` is consumed.
void add_stacks_after_char(const Rules& rules, const Stack& stack, StackSet& out) {
  TESSERA_CHECK(!stack.empty());
  Stack next(stack.begin(), stack.end() - 1);
  const uint32_t top = stack.back();
  if (rules.symbols[top + 1].kind != SymbolKind::End) next.push_back(top + 1);
  expand_stack(rules, std::move(next), out);
}

}  // namespace

std::vector<Stack> initial_stacks(const Rules& rules) {
  StackSet out;
  for (const uint32_t start : rules.rules[rules.root].alternatives) {
    Stack stack;
    if (rules.symbols[start].kind != SymbolKind::End) stack.push_back(start);
    expand_stack(rules, std::move(stack), out);
  }
  return out.take();
}

std::vector<Stack> stacks_after_char(const Rules& rules, const Stack& stack) {
  StackSet out;
  add_stacks_after_char(rules, stack, out);
  return out.take();
}

std::vector<Stack> advance_stacks(const Rules& rules, const std::vector<Stack>& stacks,
                                  uint32_t cpt) {
  StackSet out;
  for (const Stack& stack : stacks) {
    if (stack.empty()) continue;
    const Symbol& sym = rules.symbols[stack.back()];
    if (rules.charsets[sym.index].contains(cpt)) add_stacks_after_char(rules, stack, out);
  }
  return out.take();
}

}  // namespace tessera::grammar
