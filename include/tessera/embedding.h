// Turning per-token embeddings (Context::embeddings_at) into one vector per text.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tessera/status.h"

namespace tessera {

enum class Pooling {
  Mean,  // the average of every token's embedding
  Last,  // the last token's (what a causal model has read the whole text with)
  Cls,   // the first token's (BOS for LLaMA-family models)
};

/// "mean", "last" or "cls"; an error naming the other choices.
Result<Pooling> parse_pooling(std::string_view name);
/// The name parse_pooling accepts for `p`.
std::string_view pooling_name(Pooling p);

/// Pools `rows` (n_tokens x n_embd floats, token-major) into one [n_embd] vector.
/// rows.size() must be a positive multiple of n_embd.
std::vector<float> pool_embeddings(std::span<const float> rows, int64_t n_embd, Pooling pooling);

/// Scales `v` to unit Euclidean norm (a zero vector stays zero).
void normalize_l2(std::span<float> v);

}  // namespace tessera
