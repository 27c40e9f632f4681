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

/// Which stacks were seen: a scan while they are few (real grammars), a hash set past
/// that, so that a check costs the stack's depth rather than a scan of every stack.
class SeenStacks {
 public:
  /// True when `s` was not seen before (it is then remembered).
  bool insert(const Stack& s) {
    if (many_.empty()) {
      if (std::find(few_.begin(), few_.end(), s) != few_.end()) return false;
      few_.push_back(s);
      if (few_.size() > kScanUpTo) {
        many_.insert(few_.begin(), few_.end());
        few_.clear();
      }
      return true;
    }
    return many_.insert(s).second;
  }
  size_t size() const { return few_.size() + many_.size(); }

 private:
  static constexpr size_t kScanUpTo = 16;
  std::vector<Stack> few_;
  std::unordered_set<Stack, StackHash> many_;
};

/// The stacks an expansion reaches, without duplicates, in the order first reached. An
/// ambiguous grammar reaches the same stack by many paths (`item ::= "- "?{1,200}` has
/// hundreds of stacks per character; `item{0,10}` of a nullable item, 200^10 paths), so
/// every intermediate stack (a rule reference on top) is expanded once and every final
/// stack kept once (the grammar fuzzer's timeouts: 23 s for 30 characters, then a
/// 200^10 walk). Past kMaxGrammarStacks of either, the text is refused with a warning.
class StackSet {
 public:
  /// False when `s` was expanded before (its stacks are already here) or the set is full.
  bool expand_first(const Stack& s) { return !full_ && expanded_.insert(s) && !check_full(expanded_.size()); }
  void add(Stack s) {
    if (full_ || !seen_.insert(s) || check_full(list_.size() + 1)) return;
    list_.push_back(std::move(s));
  }
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
  bool check_full(size_t n) {
    if (n > size_t(limits::kMaxGrammarStacks)) full_ = true;
    return full_;
  }

  std::vector<Stack> list_;
  SeenStacks seen_;      // of list_
  SeenStacks expanded_;  // the intermediate stacks expanded so far
  bool full_ = false;
};

/// Adds to `out` every stack that `stack` expands to: while the top is a rule reference,
/// it is replaced by the start of each alternative (an empty alternative continues with
/// what follows the reference). Depth first in the alternatives' order, with a work list
/// rather than recursion: a chain of empty alternatives can be tens of thousands deep
/// (`("a"?{1,200}){1,200}`), too deep for the call stack. Needs a grammar without left
/// recursion (the parser rejects it).
void expand_stack(const Rules& rules, Stack stack, StackSet& out) {
  std::vector<Stack> work;
  work.push_back(std::move(stack));
  while (!work.empty()) {
    Stack s = std::move(work.back());
    work.pop_back();
    if (!s.empty()) {
      const uint32_t top = s.back();
      const Symbol& sym = rules.symbols[top];
      TESSERA_CHECK(sym.kind != SymbolKind::End);
      if (sym.kind == SymbolKind::Rule) {
        if (!out.expand_first(s)) continue;
        s.pop_back();
        if (rules.symbols[top + 1].kind != SymbolKind::End) s.push_back(top + 1);
        const std::vector<uint32_t>& alternatives = rules.rules[sym.index].alternatives;
        for (auto it = alternatives.rbegin(); it != alternatives.rend(); ++it) {  // the first on top
          Stack next = s;
          if (rules.symbols[*it].kind != SymbolKind::End) next.push_back(*it);
          work.push_back(std::move(next));
        }
        continue;
      }
    }
    out.add(std::move(s));
  }
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
