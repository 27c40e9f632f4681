// A batch: tokens evaluated together in one forward pass, each with its position, the
// sequences it belongs to and whether its outputs (logits, embeddings) are wanted.
// One batch can serve many sequences at once (continuous batching).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera {

using TokenId = int32_t;
using SeqId = int32_t;  // 0 .. ContextParams::n_seq_max - 1
using Pos = int32_t;    // a token's position inside its sequence (what RoPE sees)

class Batch {
 public:
  /// Appends `token` at position `pos` of every sequence in `seqs` (usually one; several
  /// for a prefix shared by sequences that have the same history). `output`: keep its
  /// logits (and embeddings) readable after decode.
  void add(TokenId token, Pos pos, std::span<const SeqId> seqs, bool output);
  /// Appends `token` at position `pos` of sequence `seq`.
  void add(TokenId token, Pos pos, SeqId seq, bool output);
  /// Appends `tokens` at positions pos0, pos0 + 1, ... of `seq`; only the last one is an
  /// output unless `all_outputs`.
  void add_sequence(std::span<const TokenId> tokens, Pos pos0, SeqId seq, bool all_outputs = false);
  /// Removes every token.
  void clear();

  /// Number of tokens.
  int64_t size() const { return int64_t(tokens_.size()); }
  bool empty() const { return tokens_.empty(); }
  /// Number of tokens whose outputs are wanted.
  int64_t n_outputs() const { return n_outputs_; }

  /// Token i's id, position, sequences and output flag (i < size()).
  TokenId token(int64_t i) const { return tokens_[size_t(i)]; }
  Pos pos(int64_t i) const { return pos_[size_t(i)]; }
  std::span<const SeqId> seqs(int64_t i) const;
  bool output(int64_t i) const { return output_[size_t(i)] != 0; }

 private:
  std::vector<TokenId> tokens_;
  std::vector<Pos> pos_;
  std::vector<uint8_t> output_;
  std::vector<SeqId> seq_ids_;         // the sequences of all tokens, concatenated
  std::vector<uint32_t> seq_begin_{0};  // token i's sequences: [seq_begin_[i], seq_begin_[i+1])
  int64_t n_outputs_ = 0;
};

}  // namespace tessera
