// The interface each tokenizer algorithm ("llama" SentencePiece, "gpt2" byte-level BPE,
// "bert" WordPiece)
// implements over a Vocab. The Tokenizer does what is common to all of them: cutting
// special tokens out of the input, BOS/EOS, and concatenating pieces.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tessera/tokenizer.h"

namespace tessera::tok {

class Algorithm {
 public:
  virtual ~Algorithm() = default;

  /// Appends the tokens of `text`, a run of input holding no special token.
  /// `after_special` is true for the first run and for a run that follows a special
  /// token (BOS included): SentencePiece prefixes such runs with a space.
  virtual void encode_text(std::string_view text, bool after_special,
                           std::vector<TokenId>& out) const = 0;

  /// The bytes token `id` (in range) stands for; control and unknown tokens give their
  /// text when `render_special`, "" otherwise.
  virtual std::string piece(TokenId id, bool render_special) const = 0;

  /// True when add_special frames every input with the BOS ([CLS]) and SEP ids whatever
  /// the add_bos / add_eos flags say (WordPiece, as the reference does).
  virtual bool frames_input() const { return false; }

  /// The name of the pre-tokenizer in use ("" when the algorithm has none).
  virtual std::string_view pre_tokenizer_name() const { return {}; }
};

}  // namespace tessera::tok
