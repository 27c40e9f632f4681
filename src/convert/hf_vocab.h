// The tokenizer part of `tessera convert`: a Hugging Face folder's tokenizer files as the
// tokenizer.* keys that llama.cpp's convert_hf_to_gguf.py writes for it. The vocabulary
// comes from the first of tokenizer.json (HF tokenizers BPE: byte-level → model "gpt2",
// SentencePiece-style with byte fallback → "llama"), tokenizer.model (SentencePiece
// protobuf → "llama") and vocab.txt (WordPiece → "bert"); tokenizer_config.json,
// chat_template.jinja, config.json and generation_config.json give the special tokens, the
// BOS/EOS flags and the chat templates.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tessera/gguf.h"
#include "tessera/status.h"

namespace tessera::convert {

/// GGUF token types (tokenizer.ggml.token_type), as llama.cpp numbers them.
enum TokenKind : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6
};

/// A vocabulary as read from one tokenizer file, before the special tokens.
struct HfVocab {
  std::string model;  // tokenizer.ggml.model: gpt2, llama or bert
  std::string pre;    // tokenizer.ggml.pre
  std::vector<std::string> tokens;
  std::vector<float> scores;  // empty: not written
  std::vector<int32_t> types;
  std::vector<std::string> merges;  // "left right"; empty: not written
  std::optional<bool> add_space_prefix;
  /// tokenizer.json's model.ignore_merges, where it differs from the rule of the
  /// pre-tokenizer named (gpt-oss: gpt-4o's regexes, merges ignored): written as
  /// tokenizer.tessera.ignore_merges, which tessera's tokenizer honours.
  std::optional<bool> ignore_merges;
  /// The pre-tokenizer's regexes as tokenizer.json publishes them, where llama.cpp runs an
  /// adapted form under the name `pre` (o200k's and Tekken's mark classes, cl100k's
  /// case-insensitive contractions): written as tokenizer.tessera.pre_regexes, which
  /// tessera's tokenizer runs instead, so that the file tokenizes as the model's own
  /// tokenizer does. Empty: not written.
  std::vector<std::string> pre_regexes;
  /// Special ids the file itself names (SentencePiece's trainer spec): -1 when absent.
  int64_t unk_id = -1, bos_id = -1, eos_id = -1, pad_id = -1;
};

/// tokenizer.json. `vocab_size` (config.json's, or 0) pads missing ids as the reference does.
Result<HfVocab> read_tokenizer_json(const std::filesystem::path& file, int64_t vocab_size);
/// tokenizer.model (SentencePiece's ModelProto), read without the protobuf library.
Result<HfVocab> read_sentencepiece_model(const std::filesystem::path& file, int64_t vocab_size);
/// BERT's vocab.txt (WordPiece, one token a line), in GGUF's phantom-space form.
Result<HfVocab> read_wordpiece_vocab(const std::filesystem::path& file);

/// The tokenizer.ggml.pre name whose regexes a tokenizer.json pre_tokenizer applies, from
/// the regexes themselves; an error quoting them when none of tessera's has them.
/// `pre_tokenizer_json` is the pre_tokenizer object as JSON text. `published`, when given,
/// receives the regexes as the file spells them.
Result<std::string> identify_pre_tokenizer(const std::string& pre_tokenizer_json, bool ignore_merges,
                                           std::vector<std::string>* published = nullptr);

/// Whether `dir` holds a tokenizer file add_hf_vocab reads.
bool has_hf_vocab(const std::filesystem::path& dir);

/// Adds the tokenizer.* keys of `dir`'s tokenizer files to `w`. `arch` is the tessera
/// architecture written (BERT-family ones also get tokenizer.ggml.token_type_count).
/// Errors name the file and what in it could not be read.
Status add_hf_vocab(const std::filesystem::path& dir, const std::string& arch, gguf::Writer& w);

}  // namespace tessera::convert
