// Vocabularies for synthetic models: a generated SentencePiece-style one, or a copy of
// another GGUF file's tokenizer.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/gguf.h"

namespace tessera::cli {

/// Writes tokenizer.ggml.* keys for a vocabulary of exactly n_vocab pieces: <unk>, <s>,
/// </s>, the 256 byte tokens, then English word pieces (every prefix of a word, so
/// SentencePiece merges can reach the word), padded with letter n-grams (2 to 4 letters,
/// with and without the space mark).
Status add_generated_vocab(gguf::Writer& w, int64_t n_vocab);

/// Copies every tokenizer.* key of `path`; sets *n_vocab to its token count.
Status copy_vocab(gguf::Writer& w, const std::string& path, int64_t* n_vocab);

}  // namespace tessera::cli
