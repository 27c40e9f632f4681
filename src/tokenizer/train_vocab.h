// Trains a SentencePiece-style BPE vocabulary ("llama" in GGUF terms) on a text, so that
// `tessera train` can write it into a model like any other vocabulary, readable by our
// Tokenizer and by llama.cpp.
//
// Layout, as LLaMA's: <unk> = 0 (UNKNOWN), <s> = 1 and </s> = 2 (CONTROL), the 256 byte
// tokens <0x00>..<0xFF> (BYTE), the pieces learned by merges in the order learned, then the
// single characters (NORMAL). Spaces are U+2581 "▁" and the text gets a space prefix
// (add_space_prefix), as our SPM encoder and llama.cpp's see it.
//
// Decisions:
//  - Words: the text is cut at every space (a "▁" starts a word; a literal U+2581 counts as
//    a space, as the encoder cannot tell them apart) and at characters that never join a
//    piece: ASCII control characters (newline, tab, ...), invalid UTF-8 (the encoder's
//    symbol: as many bytes as the lead byte announces) and characters outside the
//    alphabet. A word after a newline has no "▁", as the encoder sees it. So pieces hold
//    "▁" only at their start and never whitespace; those characters fall back to bytes.
//  - Alphabet: the most frequent characters covering `character_coverage` of the word
//    characters become single-character pieces (SentencePiece's rule and default 0.9995),
//    at most half of the learned slots, and always "▁" (the encoder starts every text with
//    one, and the decoder drops that space only from a normal token). A rarer character
//    costs a few byte tokens where it occurs, which is cheaper than a slot nearly never
//    used; it does not join merges, so no piece depends on it. A threshold in counts (seen
//    >= N times) would mean something else on every text size; a share of the text does not.
//  - Merges: BPE over the word-frequency table; the most frequent adjacent pair first,
//    ties broken by the pair's texts (left, then right, bytewise), so the result depends
//    only on the text. Pair counts are updated incrementally: a merge revisits only the
//    words that hold the pair, and a lazy max-heap gives the next pair.
//  - Scores: -(merge rank) for learned pieces, continuing below them for characters
//    (whose score no merge reads). Our encoder merges the highest-scoring adjacent pair
//    whose text is a token, which replays the merges in order (as SentencePiece's BPE
//    models do; it may also join another split of a learned text, which only helps). A
//    merge whose text was already learned (by another split) adds no token.
//  - Refused pieces: longer than `max_piece_chars` characters (SentencePiece's 16: long
//    pieces come from repeated boilerplate and waste slots), and texts a loader would not
//    read as a normal token: the texts of the fixed tokens ("<s>", "<0x0A>", ...) and
//    texts the loaders take for roles ("<|endoftext|>", "<PAD>", ...: control tokens);
//    and the second-learned half of a fixed token's text ("<s" when ">" is a character,
//    "1>" after "<0x4"), since the encoder joins any two symbols whose text is a token and
//    would turn "<s>" in a text into BOS.
//  - The vocabulary has exactly vocab_size tokens; a text too small to learn that many
//    pieces is an error that says the largest size it allows.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.h"

namespace tessera {

namespace gguf {
class Writer;
}

struct VocabTrainParams {
  /// Tokens in all, the 259 fixed ones included; at least kMinTrainedVocab.
  int64_t vocab_size = 4096;
  /// Share of the word characters that the single-character pieces must cover, in (0, 1].
  double character_coverage = 0.9995;
  /// Longest learned piece, in characters ("▁" counts as one); at least 2.
  int max_piece_chars = 16;
};

/// 3 special + 256 byte tokens + at least 16 learned pieces: below that the vocabulary is
/// bytes, and there is nothing to train.
inline constexpr int64_t kMinTrainedVocab = 3 + 256 + 16;
/// Largest vocab_size: scores are f32, which hold every rank exactly up to 2^24.
inline constexpr int64_t kMaxTrainedVocab = int64_t{1} << 24;

struct TrainedVocab {
  std::vector<std::string> tokens;  // with U+2581 for spaces
  std::vector<float> scores;
  std::vector<int32_t> types;  // GGUF token types: NORMAL 1, UNKNOWN 2, CONTROL 3, BYTE 6
  int32_t unk = 0;
  int32_t bos = 1;
  int32_t eos = 2;
  bool add_bos = true;
  bool add_eos = false;
  bool add_space_prefix = true;
  int64_t n_merged = 0;  // learned multi-character pieces (after the byte tokens)
  int64_t n_chars = 0;   // single-character pieces (at the end)
};

/// Called after each learned piece: (pieces learned, pieces to learn).
using VocabTrainProgress = std::function<void(int64_t learned, int64_t target)>;

/// Learns a vocabulary of exactly p.vocab_size tokens from `text` (any bytes). Errors:
/// empty text, parameters out of range, or a text that allows fewer pieces than asked.
Result<TrainedVocab> train_vocab(std::string_view text, const VocabTrainParams& p,
                                 const VocabTrainProgress& progress = {});

/// Writes every tokenizer.ggml.* key a "llama" vocabulary needs: model, tokens, scores,
/// token_type, bos/eos/unknown ids, add_bos_token, add_eos_token, add_space_prefix.
/// Errors: arrays of different sizes or special ids out of range.
Status write_vocab(gguf::Writer& w, const TrainedVocab& v);

}  // namespace tessera
