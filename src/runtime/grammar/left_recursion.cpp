// Left recursion: a rule that can derive itself as its first symbol (directly, or after
// rules that can match the empty string) would make stack expansion loop forever.
#include <string>
#include <vector>

#include "runtime/grammar/parser.h"

namespace tessera::grammar {
namespace {

/// Which rules can match the empty string (a fixpoint over the alternatives).
std::vector<bool> nullable_rules(const Rules& g) {
  std::vector<bool> nullable(g.rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r) {
      if (nullable[r]) continue;
      for (const uint32_t start : g.rules[r].alternatives) {
        bool empty = true;
        for (uint32_t i = start; g.symbols[i].kind != SymbolKind::End && empty; ++i) {
          empty = g.symbols[i].kind == SymbolKind::Rule && nullable[g.symbols[i].index];
        }
        if (empty) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

/// For each rule, the rules that can come first in it.
std::vector<std::vector<uint32_t>> first_rules(const Rules& g, const std::vector<bool>& nullable) {
  std::vector<std::vector<uint32_t>> edges(g.rules.size());
  for (size_t r = 0; r < g.rules.size(); ++r) {
    for (const uint32_t start : g.rules[r].alternatives) {
      for (uint32_t i = start; g.symbols[i].kind == SymbolKind::Rule; ++i) {
        edges[r].push_back(g.symbols[i].index);
        if (!nullable[g.symbols[i].index]) break;
      }
    }
  }
  return edges;
}

/// Depth-first search for a cycle; fills `cycle` (first rule repeated at the end).
bool find_cycle(const std::vector<std::vector<uint32_t>>& edges, uint32_t node,
                std::vector<int>& state, std::vector<uint32_t>& path,
                std::vector<uint32_t>& cycle) {
  state[node] = 1;  // on the path
  path.push_back(node);
  for (const uint32_t next : edges[node]) {
    if (state[next] == 1) {
      size_t i = 0;
      while (path[i] != next) ++i;
      cycle.assign(path.begin() + static_cast<std::ptrdiff_t>(i), path.end());
      cycle.push_back(next);
      return true;
    }
    if (state[next] == 0 && find_cycle(edges, next, state, path, cycle)) return true;
  }
  path.pop_back();
  state[node] = 2;  // done, no cycle through it
  return false;
}

}  // namespace

Status check_left_recursion(const Rules& g, std::string_view source) {
  const std::vector<bool> nullable = nullable_rules(g);
  const auto edges = first_rules(g, nullable);
  std::vector<int> state(g.rules.size(), 0);
  for (uint32_t r = 0; r < g.rules.size(); ++r) {
    if (state[r] != 0) continue;
    std::vector<uint32_t> path, cycle;
    if (!find_cycle(edges, r, state, path, cycle)) continue;
    const Rule& first = g.rules[cycle[0]];
    std::string where = std::string(source) + ":" + std::to_string(first.line) + ":" +
                        std::to_string(first.column) + ": ";
    if (cycle.size() == 2 && first.origin == RuleOrigin::Repeat) {
      return Status::error(where +
                           "this repetition repeats an expression that can match the empty string");
    }
    std::string chain;
    for (const uint32_t id : cycle) chain += (chain.empty() ? "" : " -> ") + g.rules[id].name;
    return Status::error(where + "left recursion: rule '" + first.name +
                         "' can start with itself (" + chain + ")");
  }
  return Status::ok();
}

}  // namespace tessera::grammar
