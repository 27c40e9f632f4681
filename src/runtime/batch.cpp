#include "tessera/batch.h"

namespace tessera {

void Batch::add(TokenId token, Pos pos, std::span<const SeqId> seqs, bool output) {
  tokens_.push_back(token);
  pos_.push_back(pos);
  output_.push_back(output ? 1 : 0);
  seq_ids_.insert(seq_ids_.end(), seqs.begin(), seqs.end());
  seq_begin_.push_back(uint32_t(seq_ids_.size()));
  if (output) ++n_outputs_;
}

void Batch::add(TokenId token, Pos pos, SeqId seq, bool output) {
  const SeqId one[] = {seq};
  add(token, pos, one, output);
}

void Batch::add_sequence(std::span<const TokenId> tokens, Pos pos0, SeqId seq, bool all_outputs) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    add(tokens[i], pos0 + Pos(i), seq, all_outputs || i + 1 == tokens.size());
  }
}

void Batch::clear() {
  tokens_.clear();
  pos_.clear();
  output_.clear();
  seq_ids_.clear();
  seq_begin_.assign(1, 0);
  n_outputs_ = 0;
}

std::span<const SeqId> Batch::seqs(int64_t i) const {
  const uint32_t b = seq_begin_[size_t(i)];
  const uint32_t e = seq_begin_[size_t(i) + 1];
  return std::span<const SeqId>(seq_ids_).subspan(b, e - b);
}

}  // namespace tessera
