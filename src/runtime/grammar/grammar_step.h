// The grammar sampler step as the lazy grammar step sees it: a SamplerStep that can also
// take text that no single token stands for (the trigger and what followed it), and that
// tells the text of each token as it decoded it.
#pragma once

#include <memory>
#include <string_view>

#include "tessera/grammar.h"
#include "tessera/sampler.h"

namespace tessera::grammar {

class TextGrammarStep : public SamplerStep {
 public:
  /// Advances the grammar by `text` (UTF-8; a character may be cut at the end). An error,
  /// state unchanged, when the grammar refuses it.
  virtual Status accept_text(std::string_view text) = 0;
  /// The token's text as the step decoded it ("" outside the vocabulary).
  virtual std::string_view token_text(TokenId token) const = 0;
  /// True for a token that ends generation.
  virtual bool token_ends(TokenId token) const = 0;
};

/// make_grammar_step's step, with its full type.
std::unique_ptr<TextGrammarStep> make_text_grammar_step(std::shared_ptr<const Grammar> grammar,
                                                        const Tokenizer& tokenizer,
                                                        bool render_special);

}  // namespace tessera::grammar
