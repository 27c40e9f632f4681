// The tokenizer files of a Hugging Face folder written from a GGUF vocabulary, by the
// inverse of the reference converter's rules (tests of `tessera convert`): "gpt2"
// vocabularies as tokenizer.json (byte-level BPE, the pre-tokenizer as the models publish
// it), "llama" ones as SentencePiece's tokenizer.model (protobuf written here) or as a
// SentencePiece-style tokenizer.json (byte_fallback, merges made from the scores), "bert"
// ones as vocab.txt; tokenizer_config.json with the special tokens and flags.
#pragma once

#include <filesystem>

#include "tessera/gguf.h"

namespace tessera::test {

enum class HfTokenizerForm {
  Auto,        // by tokenizer.ggml.model: tokenizer.json / tokenizer.model / vocab.txt
  PairMerges,  // "gpt2": tokenizer.json with merges as ["a", "b"] pairs
  /// "llama": tokenizer.json (BPE with byte_fallback) instead of tokenizer.model. Faithful
  /// only for vocabularies that hold every character as a piece, as real SentencePiece ones
  /// do (HF's BPE cannot merge pieces it does not have; the synthetic test vocabularies of
  /// archs*/models lack them).
  SpmJson,
};

/// Writes the files into `dir` (which must exist). Fails the current test on a vocabulary
/// it cannot invert.
void write_hf_tokenizer(const gguf::File& f, const std::filesystem::path& dir,
                        HfTokenizerForm form = HfTokenizerForm::Auto);

}  // namespace tessera::test
