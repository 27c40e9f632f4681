// Random sentences of a grammar, for tests: a walk over a GrammarMatcher that takes, at
// each step, a random code point among those of an alphabet that the grammar allows next.
// The code points are grouped by where they lead (the matcher's parse stacks after them),
// and a group is drawn before a code point in it: a rare way forward (the one letter
// that continues a literal, among a hundred that do not) is taken as often as a common one.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/grammar/matcher_state.h"
#include "tessera/grammar.h"
#include "tessera/json_schema.h"
#include "tokenizer/unicode.h"

namespace tessera::test {

/// A schema's grammar, parsed (null, with a test failure, when either step refuses it).
inline std::shared_ptr<const Grammar> schema_grammar(const std::string& schema) {
  Result<std::string> text = json_schema_to_grammar(schema);
  EXPECT_TRUE(text.is_ok()) << text.status().message() << "\nschema: " << schema;
  if (!text) return nullptr;
  Result<std::shared_ptr<const Grammar>> g = Grammar::parse(*text, "schema");
  EXPECT_TRUE(g.is_ok()) << g.status().message() << "\n" << *text;
  return g ? *g : nullptr;
}

struct GrammarWalk {
  std::string text;    // UTF-8
  bool ended = false;  // the text is a complete sentence
  bool stuck = false;  // no letter of the alphabet could follow, and the text was not complete
};

/// One walk: stops where the grammar may end and a coin with `p_stop` says so, or where no
/// letter can follow; after `max_steps` letters it stops where it is.
inline GrammarWalk random_walk(const std::shared_ptr<const Grammar>& grammar,
                               const std::vector<uint32_t>& alphabet, std::mt19937& rng,
                               double p_stop = 0.1, size_t max_steps = 120) {
  GrammarMatcher m(grammar);
  GrammarWalk walk;
  std::bernoulli_distribution stop(p_stop);
  for (size_t step = 0; step < max_steps; ++step) {
    if (m.can_end() && stop(rng)) break;
    std::vector<std::pair<std::vector<grammar::Stack>, std::vector<uint32_t>>> groups;
    for (const uint32_t c : alphabet) {
      GrammarMatcher next = m;
      if (!next.accept_codepoint(c)) continue;
      const auto& stacks = next.state().stacks;
      auto it = std::find_if(groups.begin(), groups.end(),
                             [&](const auto& g) { return g.first == stacks; });
      if (it == groups.end()) it = groups.insert(groups.end(), {stacks, {}});
      it->second.push_back(c);
    }
    if (groups.empty()) {
      walk.stuck = !m.can_end();
      break;
    }
    const auto& group =
        groups[std::uniform_int_distribution<size_t>(0, groups.size() - 1)(rng)].second;
    const uint32_t c = group[std::uniform_int_distribution<size_t>(0, group.size() - 1)(rng)];
    m.accept_codepoint(c);
    tok::append_utf8(c, walk.text);
  }
  walk.ended = m.can_end();
  return walk;
}

/// Printable ASCII, some control characters, and a few code points beyond ASCII (spaces
/// that ECMA-262's \s knows, a line separator, a letter, an emoji).
inline std::vector<uint32_t> test_alphabet() {
  std::vector<uint32_t> a;
  for (uint32_t c = 0x20; c < 0x7F; ++c) a.push_back(c);
  for (const uint32_t c : {0x00u, 0x01u, 0x08u, 0x09u, 0x0Au, 0x0Bu, 0x0Du, 0x1Fu, 0x7Fu, 0xA0u,
                           0xE9u, 0x2028u, 0x3000u, 0xFEFFu, 0x1F600u})
    a.push_back(c);
  return a;
}

/// The code points of a UTF-8 string.
inline std::u32string code_points(const std::string& utf8) {
  std::u32string out;
  for (size_t pos = 0; pos < utf8.size();) {
    const tok::Utf8Scan scan = tok::scan_utf8(utf8, pos);
    out.push_back(static_cast<char32_t>(scan.cpt));
    pos += scan.len;
  }
  return out;
}

}  // namespace tessera::test
