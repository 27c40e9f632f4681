// WordPiece tokenization ("bert" vocabularies), as the reference engine does it
// (llm_tokenizer_wpm_session):
//  - the text is decoded leniently (an invalid byte becomes U+FFFD), each code point
//    replaced by the first code point of its canonical decomposition and lowercased
//    (unicode_props.h); U+0000, U+FFFD and control characters are dropped;
//  - words end at whitespace; punctuation, ASCII symbols and CJK ideographs are words of
//    one character;
//  - each word gets the phantom prefix U+2581 (word-start tokens are stored "▁word", the
//    continuations without "##") and is matched greedily from the left, the longest
//    vocabulary text first, byte by byte; a word with a position nothing matches becomes
//    the one unknown token.
// [CLS] (the BOS id) and [SEP] frame the whole input with add_special (Tokenizer::encode).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/algorithm.h"
#include "tokenizer/vocab.h"

namespace tessera::tok {

class WpmAlgorithm final : public Algorithm {
 public:
  /// Over `vocab`, which must outlive it and have an unknown token.
  explicit WpmAlgorithm(const Vocab& vocab);

  void encode_text(std::string_view text, bool after_special, std::vector<TokenId>& out) const override;
  std::string piece(TokenId id, bool render_special) const override;
  bool frames_input() const override { return true; }

  /// The words of `text` after the preprocessing above (tests).
  static std::vector<std::string> words(std::string_view text);

 private:
  const Vocab& vocab_;
  size_t max_token_len_ = 0;  // bytes of the longest token text
};

}  // namespace tessera::tok
