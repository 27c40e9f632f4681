// The inside of a GrammarMatcher, and the UTF-8 helpers shared with the sampler step.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/grammar/rules.h"
#include "tessera/grammar.h"

namespace tessera {

struct GrammarMatcher::State {
  std::vector<grammar::Stack> stacks;  // empty stack: the text may end here
  std::string pending;                 // the bytes of an incomplete UTF-8 character
};

namespace grammar {

/// The code points an incomplete UTF-8 sequence (a proper prefix of a well-formed one)
/// can still become: [lo, hi].
struct PartialRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
};
PartialRange partial_range(std::string_view prefix);

/// True when the character at the top of `stack` may be one that starts with `prefix`.
bool partial_fits(const Rules& rules, const Stack& stack, const PartialRange& range);

/// Decodes `bytes` into code points; a truncated character at the end goes to `partial`.
/// False when the bytes are not UTF-8 (an invalid sequence anywhere).
bool decode_utf8(std::string_view bytes, std::vector<uint32_t>& cpts, std::string& partial);

}  // namespace grammar
}  // namespace tessera
