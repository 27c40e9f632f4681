#include "tessera/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace tessera {

TokenId argmax(std::span<const float> logits) {
  return TokenId(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {}

TokenId Sampler::sample(std::span<const float> logits) {
  if (params_.temperature <= 0.0f) return argmax(logits);

  // Candidates sorted by logit, cut to top-k.
  std::vector<TokenId> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  size_t k = ids.size();
  if (params_.top_k > 0) k = std::min(k, size_t(params_.top_k));
  std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(k), ids.end(),
                    [&](TokenId a, TokenId b) { return logits[size_t(a)] > logits[size_t(b)]; });
  ids.resize(k);

  // Softmax at the temperature, then the smallest prefix whose mass reaches top_p.
  const float max_logit = logits[size_t(ids[0])];
  std::vector<double> probs(k);
  double sum = 0.0;
  for (size_t i = 0; i < k; ++i) {
    probs[i] = std::exp(double(logits[size_t(ids[i])] - max_logit) / params_.temperature);
    sum += probs[i];
  }
  size_t keep = k;
  if (params_.top_p < 1.0f) {
    double mass = 0.0;
    for (size_t i = 0; i < k; ++i) {
      mass += probs[i] / sum;
      if (mass >= params_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  std::discrete_distribution<size_t> draw(probs.begin(), probs.begin() + std::ptrdiff_t(keep));
  return ids[draw(rng_)];
}

}  // namespace tessera
