// The Unicode properties WordPiece preprocessing reads, as the reference engine has them
// (its unicode.cpp / unicode-data.cpp): a code point's class (control, punctuation,
// symbol), its "NFD" (the reference keeps only the first code point of the canonical
// decomposition, so a precomposed letter loses its accent while a combining mark already
// in the text stays), its single-code-point lowercase, and whitespace. The tables
// (unicode_categories.cpp, unicode_nfd.cpp, unicode_lowercase.cpp) are generated from the
// Unicode Character Database as the reference's gen-unicode-data.py does.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::tok {

/// The general-category classes the WordPiece preprocessing asks about.
enum class CharClass : uint8_t {
  Other = 0,
  Control = 1,      // Cc, Cf, Co, Cs (not Cn: unassigned code points are "undefined")
  Punctuation = 2,  // P*
  Symbol = 3,       // S*
};

struct CategoryRange {
  uint32_t first;
  uint32_t last;
  uint8_t cls;  // a CharClass
};
struct NfdRange {
  uint32_t first;
  uint32_t last;
  uint32_t nfd;  // the first code point of the decomposition of every code point in the range
};
struct CasePair {
  uint32_t from;
  uint32_t to;
};

// The generated tables, sorted by code point, non-overlapping.
extern const CategoryRange kCategoryRanges[];
extern const size_t kCategoryRanges_size;
extern const NfdRange kNfdRanges[];
extern const size_t kNfdRanges_size;
extern const CasePair kLowercasePairs[];
extern const size_t kLowercasePairs_size;

CharClass char_class(uint32_t cpt);
/// The first code point of the canonical decomposition of `cpt` (itself when it has none).
uint32_t nfd_first(uint32_t cpt);
/// The lowercase of `cpt` when Unicode maps it to one code point, else `cpt`.
uint32_t to_lower(uint32_t cpt);
/// The reference's whitespace set: \t..\r, space, U+0085, U+00A0, U+1680, U+2000..U+200A,
/// U+2028, U+2029, U+202F, U+205F, U+3000.
bool is_whitespace(uint32_t cpt);
/// The CJK ideograph blocks BERT splits into single-character words (the reference's
/// is_chinese_char, with its 0x2B920 start of the Extension E..F range).
bool is_cjk_ideograph(uint32_t cpt);

}  // namespace tessera::tok
