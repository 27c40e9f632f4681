// Pre-tokenizers of byte-level BPE vocabularies: the regexes that cut text into
// pre-tokens before merging, selected by `tokenizer.ggml.pre`, run with PCRE2.
//
// A pre-tokenizer is a sequence of regexes applied in turn: the first splits the whole
// text; each later one splits every piece of the previous one. A regex splits a piece into
// its matches and the gaps between them; both are kept, in order (a gap is one piece
// however many characters it holds), and empty ones are dropped. Searching follows
// std::regex_iterator, as llama.cpp does: after an empty match the next match must be
// non-empty at the same place, else the search moves on by one character.
//
// The published regexes are translated before PCRE2 compiles them (UTF mode, no UCP):
// `\s` / `\S` become the whitespace set llama.cpp uses (ASCII \t..\r and space, U+0085,
// U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000), and \d, \w stay
// ASCII as in std::regex. `$` matches only at the end of a piece.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.h"

namespace tessera::tok {

/// A pre-tokenizer as published for one family of models.
struct PreTokenizerSpec {
  std::string_view name;                  // the canonical tokenizer.ggml.pre value
  std::vector<std::string_view> aliases;  // other values that select it
  std::vector<std::string_view> regexes;  // applied in turn
  bool ignore_merges = false;  // a pre-token that is itself a token is not merged (llama3)
  bool add_bos = false;        // default of tokenizer.ggml.add_bos_token
  bool no_bos = false;         // the vocabulary has no BOS token (chatglm)
};

/// Every known pre-tokenizer (pretokenizers.cpp).
const std::vector<PreTokenizerSpec>& pre_tokenizer_specs();
/// The spec a tokenizer.ggml.pre value selects (by name or alias); nullptr if unknown.
const PreTokenizerSpec* find_pre_tokenizer(std::string_view pre);
/// llama.cpp's "default" pre-tokenizer: used when the key is missing or its value unknown.
const PreTokenizerSpec& default_pre_tokenizer();

/// The PCRE2 form of a published regex (see the header comment).
std::string to_pcre2_pattern(std::string_view regex);

/// A byte range [begin, end) of a text.
struct Span {
  size_t begin;
  size_t end;
};

/// A compiled sequence of regexes. Immutable; split() may run on many threads at once.
class PreTokenizer {
 public:
  /// Compiles the regexes (JIT where available). Errors name the regex, the offset in it
  /// and PCRE2's message.
  static Result<PreTokenizer> compile(const std::vector<std::string_view>& regexes);

  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  ~PreTokenizer();

  /// Replaces `pieces` with the pre-tokens of `text`, which must be well-formed UTF-8.
  void split(std::string_view text, std::vector<Span>& pieces) const;
  /// The same, as strings (tests, tools).
  std::vector<std::string> split(std::string_view text) const;

 private:
  struct Impl;
  explicit PreTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::tok
