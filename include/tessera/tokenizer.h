// Tokenizers: text <-> token ids, exactly as llama.cpp tokenizes a GGUF vocabulary.
//
// A Tokenizer is a vocabulary (tokenizer.ggml.* keys of a GGUF file) plus the algorithm
// its `tokenizer.ggml.model` names. Supported: "llama" (SentencePiece-style merges by
// score, with byte fallback), "gpt2" (byte-level BPE: merges by rank after the
// pre-tokenizer regexes that `tokenizer.ggml.pre` names, run with PCRE2) and "bert"
// (WordPiece: greedy longest match per word, src/tokenizer/wpm.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.h"

namespace tessera {

namespace gguf {
class File;
}
namespace tok {
class Vocab;
class Algorithm;
}  // namespace tok

/// Index of a token in the vocabulary.
using TokenId = int32_t;

/// Token kinds as stored in `tokenizer.ggml.token_type` (the numbers are the file's).
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

/// Converts text to token ids and back. Immutable once built; safe to share between
/// threads.
class Tokenizer {
 public:
  /// Reads the vocabulary of a GGUF file. Errors name the problem: a missing or mistyped
  /// tokens/scores array, arrays of different sizes, or an unsupported
  /// `tokenizer.ggml.model` (by name).
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const gguf::File& file);
  /// Builds a tokenizer over an already loaded vocabulary (tests, tools that craft one).
  static Result<std::unique_ptr<Tokenizer>> from_vocab(tok::Vocab vocab);

  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;
  ~Tokenizer();

  /// Token ids of `text` (any bytes; invalid UTF-8 is tolerated and byte-encoded). A
  /// byte-level vocabulary's missing byte (Falcon's has no 0x1C or 0xFE, say) is dropped
  /// inside well-formed UTF-8 and becomes U+FFFD outside it, both as in llama.cpp.
  /// `add_special`: add the special tokens the vocabulary asks for, as llama.cpp does:
  /// BOS first when tokenizer.ggml.add_bos_token (default true for "llama"; for "gpt2"
  /// false, except for pre-tokenizers such as llama3 that imply it), EOS last when
  /// tokenizer.ggml.add_eos_token (default false); "bert": always [CLS] (the BOS id)
  /// first and [SEP] (tokenizer.ggml.seperator_token_id) last.
  /// `parse_special`: texts of control and unknown tokens (e.g. "<s>") in `text` become
  /// their ids. User-defined tokens are always matched, as in llama.cpp. The text runs
  /// between them are tokenized separately, and (as in llama.cpp since 2024) every run that
  /// starts the input or follows a special token gets the space prefix ("llama" only).
  std::vector<TokenId> encode(std::string_view text, bool add_special,
                              bool parse_special = false) const;

  /// The bytes token `id` stands for: U+2581 becomes ' ', byte tokens <0xNN> that byte
  /// ("gpt2": each code point of the byte map its byte), user-defined tokens their text;
  /// control and unknown tokens "" unless `render_special` (then their text). Out-of-range
  /// ids give "". A piece may hold part of a UTF-8 character: see StreamDecoder.
  std::string token_to_piece(TokenId id, bool render_special = false) const;

  /// Concatenated pieces of `ids`, without the single leading space that the encoder's
  /// space prefix added (SentencePiece's rule: the first piece that yields text, when it
  /// is a normal token starting with U+2581). Control tokens yield "".
  std::string decode(const std::vector<TokenId>& ids) const;

  /// Number of tokens in the vocabulary.
  int32_t n_vocab() const;
  /// Special token ids; -1 when the vocabulary has none.
  TokenId bos() const;
  TokenId eos() const;
  TokenId unk() const;
  /// The separator ([SEP] of BERT vocabularies: tokenizer.ggml.seperator_token_id).
  TokenId sep() const;
  /// Whether encode(..., add_special=true) prepends BOS / appends EOS.
  bool add_bos_token() const;
  bool add_eos_token() const;
  /// True for tokens that end generation: EOS, EOT / EOM when the vocabulary has them,
  /// FIM pad/repo/separator, and tokens whose text llama.cpp treats as an end of turn
  /// ("<|eot_id|>", "<|im_end|>", "<|endoftext|>", ...).
  bool is_eog(TokenId id) const;
  /// End of turn and fill-in-the-middle prefix / suffix / middle / repository / file
  /// separator ids (-1 when absent): from the metadata, else from well-known token texts,
  /// as llama.cpp.
  TokenId eot() const;
  TokenId fim_pre() const;
  TokenId fim_suf() const;
  TokenId fim_mid() const;
  TokenId fim_rep() const;
  TokenId fim_sep() const;
  /// The pre-tokenizer in use ("gpt2" vocabularies: e.g. "gpt-2", "llama3", "default"; ""
  /// for "llama"). Unknown or missing tokenizer.ggml.pre values select "default".
  std::string_view pre_tokenizer() const;

  /// Kind of token `id` (Undefined for out-of-range ids).
  TokenType token_type(TokenId id) const;
  /// Raw vocabulary text of `id` (with U+2581 for spaces); "" for out-of-range ids.
  const std::string& token_text(TokenId id) const;
  /// The `tokenizer.ggml.model` name: "llama" or "gpt2".
  std::string_view model_name() const;

  /// The vocabulary (internal type; for the library's own layers and tests).
  const tok::Vocab& vocab() const { return *vocab_; }

 private:
  Tokenizer(std::unique_ptr<const tok::Vocab> vocab, std::unique_ptr<const tok::Algorithm> algo);
  /// Picks the algorithm for the vocabulary's model; errors are prefixed with `context`.
  static Result<std::unique_ptr<Tokenizer>> create(tok::Vocab vocab, const std::string& context);

  std::unique_ptr<const tok::Vocab> vocab_;
  std::unique_ptr<const tok::Algorithm> algo_;
};

/// Decodes a stream of tokens (generation) into text that is always well-formed UTF-8:
/// the bytes of a character split across tokens are held back until the token that
/// completes them arrives. Pieces are concatenated as token_to_piece gives them (no space
/// prefix is stripped: the stream continues a prompt).
class StreamDecoder {
 public:
  /// `tokenizer` must outlive the decoder. `render_special`: control tokens give their text.
  explicit StreamDecoder(const Tokenizer& tokenizer, bool render_special = false);

  /// The text that token `id` completes: everything pending up to the last complete
  /// character. An incomplete sequence at the end waits for the next token; bytes that
  /// cannot start or continue a character become U+FFFD.
  std::string push(TokenId id);
  /// What is still held back, an incomplete sequence becoming U+FFFD; the decoder is then
  /// empty, ready for a new stream.
  std::string flush();

 private:
  const Tokenizer* tokenizer_;
  bool render_special_;
  std::string pending_;
};

}  // namespace tessera
