// Choosing the next token from logits: greedy, or temperature + top-k + top-p with a
// seeded random draw.
#pragma once

#include <cstdint>
#include <random>
#include <span>

namespace tessera {

using TokenId = int32_t;

struct SamplerParams {
  float temperature = 0.8f;  // <= 0: greedy (argmax)
  int32_t top_k = 40;        // <= 0: all tokens
  float top_p = 0.95f;       // >= 1: no nucleus cut
  uint64_t seed = 0;
};

/// Index of the largest logit (the lowest index among equals).
TokenId argmax(std::span<const float> logits);

class Sampler {
 public:
  explicit Sampler(const SamplerParams& params);
  TokenId sample(std::span<const float> logits);

 private:
  SamplerParams params_;
  std::mt19937_64 rng_;
};

}  // namespace tessera
