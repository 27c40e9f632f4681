// SentencePiece-style tokenization ("llama" vocabularies), as llama.cpp does it:
// spaces become U+2581 ("▁"), a run that starts the input or follows a special token gets
// a "▁" prefix (when add_space_prefix), the text is split into UTF-8 characters, adjacent
// symbols are merged greedily (the pair whose merged text is the highest-scoring
// vocabulary token first; ties: leftmost first), and symbols left outside the vocabulary
// fall back to <0xNN> byte tokens (unk when the vocabulary has none).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/algorithm.h"
#include "tokenizer/vocab.h"

namespace tessera::tok {

/// The SentencePiece algorithm over `vocab`, which must outlive it.
class SpmAlgorithm final : public Algorithm {
 public:
  /// `cut_text`: merge the text piece by piece between characters no token joins (the
  /// same tokens, faster); false merges it whole, as llama.cpp (tests compare the two).
  explicit SpmAlgorithm(const Vocab& vocab, bool cut_text = true);

  void encode_text(std::string_view text, bool after_special,
                   std::vector<TokenId>& out) const override;
  std::string piece(TokenId id, bool render_special) const override;

  /// False when no token text holds `pair` (two adjacent characters) as two of its
  /// characters: no merge can then join them, and the text can be cut between them.
  /// May answer true wrongly (hash collisions), never false wrongly.
  bool may_join(std::string_view pair) const {
    if (!cut_text_) return true;
    const uint64_t h = Vocab::hash_text(pair) & (kPairBits - 1);
    return (pair_bits_[h >> 6] >> (h & 63)) & 1;
  }

 private:
  static constexpr size_t kPairBits = size_t{1} << 20;

  const Vocab& vocab_;
  bool cut_text_;
  std::vector<uint64_t> pair_bits_;  // kPairBits bits, set by the hashes of token pairs
};

/// `text` with every ' ' replaced by U+2581.
std::string escape_spaces(std::string_view text);
/// `text` with every U+2581 replaced by ' '.
std::string unescape_spaces(std::string_view text);
/// Bytes of the UTF-8 sequence that starts with `lead`, judged by the lead byte alone
/// (continuation and other invalid lead bytes count as 1), as llama.cpp splits text.
size_t utf8_sequence_length(uint8_t lead);

}  // namespace tessera::tok
