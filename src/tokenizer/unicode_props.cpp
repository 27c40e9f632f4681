#include "tokenizer/unicode_props.h"

#include <algorithm>
#include <span>

namespace tessera::tok {
namespace {

/// The entry of `table` (sorted by .first) whose range holds `cpt`, or null.
template <typename Range>
const Range* find_range(std::span<const Range> table, uint32_t cpt) {
  auto it = std::upper_bound(table.begin(), table.end(), cpt,
                             [](uint32_t c, const Range& r) { return c < r.first; });
  if (it == table.begin()) return nullptr;
  --it;
  return cpt <= it->last ? &*it : nullptr;
}

}  // namespace

CharClass char_class(uint32_t cpt) {
  const CategoryRange* r = find_range(std::span(kCategoryRanges, kCategoryRanges_size), cpt);
  return r ? CharClass(r->cls) : CharClass::Other;
}

uint32_t nfd_first(uint32_t cpt) {
  const NfdRange* r = find_range(std::span(kNfdRanges, kNfdRanges_size), cpt);
  return r ? r->nfd : cpt;
}

uint32_t to_lower(uint32_t cpt) {
  const std::span<const CasePair> pairs(kLowercasePairs, kLowercasePairs_size);
  auto it = std::lower_bound(pairs.begin(), pairs.end(), cpt, [](const CasePair& p, uint32_t c) { return p.from < c; });
  return it != pairs.end() && it->from == cpt ? it->to : cpt;
}

bool is_whitespace(uint32_t cpt) {
  return (cpt >= 0x09 && cpt <= 0x0D) || cpt == 0x20 || cpt == 0x85 || cpt == 0xA0 || cpt == 0x1680 ||
         (cpt >= 0x2000 && cpt <= 0x200A) || cpt == 0x2028 || cpt == 0x2029 || cpt == 0x202F ||
         cpt == 0x205F || cpt == 0x3000;
}

bool is_cjk_ideograph(uint32_t cpt) {
  return (cpt >= 0x4E00 && cpt <= 0x9FFF) || (cpt >= 0x3400 && cpt <= 0x4DBF) ||
         (cpt >= 0x20000 && cpt <= 0x2A6DF) || (cpt >= 0x2A700 && cpt <= 0x2B73F) ||
         (cpt >= 0x2B740 && cpt <= 0x2B81F) || (cpt >= 0x2B920 && cpt <= 0x2CEAF) ||
         (cpt >= 0xF900 && cpt <= 0xFAFF) || (cpt >= 0x2F800 && cpt <= 0x2FA1F);
}

}  // namespace tessera::tok
