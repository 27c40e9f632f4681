// Turning per-token embeddings (Context::embeddings_at) into one vector per text.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tessera/status.h"
#include "tessera/tokenizer.h"

namespace tessera {

enum class Pooling {
  Mean,  // the average of every token's embedding
  Last,  // the last token's (what a causal model has read the whole text with)
  Cls,   // the first token's (BOS for LLaMA-family models)
  Rank,  // a reranker's: the first token's, through its classification head (Model::classify)
};

/// "mean", "last", "cls" or "rank"; an error naming the other choices.
Result<Pooling> parse_pooling(std::string_view name);
/// The name parse_pooling accepts for `p`.
std::string_view pooling_name(Pooling p);

/// Pools `rows` (n_tokens x n_embd floats, token-major) into one [n_embd] vector (for Rank,
/// the first token's, which the caller passes to Model::classify).
/// rows.size() must be a positive multiple of n_embd.
std::vector<float> pool_embeddings(std::span<const float> rows, int64_t n_embd, Pooling pooling);

/// What a reranker reads for a (query, document) pair, as llama-server forms it:
/// [BOS] query [EOS] [SEP] document [EOS], the texts tokenized without their own special
/// tokens; without an EOS (BERT vocabularies) the separator stands for it, as llama-server
/// has it since; an id the vocabulary still lacks (-1) is left out.
std::vector<TokenId> rerank_tokens(const Tokenizer& tok, std::string_view query, std::string_view document);

/// Scales `v` to unit Euclidean norm (a zero vector stays zero).
void normalize_l2(std::span<float> v);

}  // namespace tessera
