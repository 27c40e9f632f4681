// Mirostat (Basu et al. 2021): truncation sized to hold the surprise near a target tau.
#include <algorithm>
#include <cmath>

#include "tessera/sampler.h"

namespace tessera {

int32_t mirostat_v1_k(const Candidates& c, float mu, int32_t m, int32_t n_vocab) {
  // Least-squares fit of the Zipf exponent s over the m most likely tokens:
  // log(p_i / p_{i+1}) = s * log((i + 2) / (i + 1)).
  float sum_ti_bi = 0.0f;
  float sum_ti_sq = 0.0f;
  for (size_t i = 0; i + 1 < static_cast<size_t>(std::max(m, 1)) && i + 1 < c.items.size(); ++i) {
    if (!(c.items[i + 1].p > 0.0f)) break;  // forbidden tokens carry no information
    const float t_i = std::log(static_cast<float>(i + 2) / static_cast<float>(i + 1));
    const float b_i = std::log(c.items[i].p / c.items[i + 1].p);
    sum_ti_bi += t_i * b_i;
    sum_ti_sq += t_i * t_i;
  }
  if (!(sum_ti_sq > 0.0f)) return 1;
  const float s_hat = sum_ti_bi / sum_ti_sq;
  const float epsilon_hat = s_hat - 1.0f;
  const float k = std::pow(epsilon_hat * std::pow(2.0f, mu) /
                               (1.0f - std::pow(static_cast<float>(n_vocab), -epsilon_hat)),
                           1.0f / s_hat);
  if (!(k >= 1.0f)) return 1;  // also NaN
  if (k >= 2147483647.0f) return 2147483647;
  return static_cast<int32_t>(k);
}

void mirostat_v2_truncate(Candidates& c, float mu) {
  softmax(c);
  size_t keep = 0;
  while (keep < c.items.size() && -std::log2(c.items[keep].p) <= mu) ++keep;
  c.items.resize(std::max<size_t>(keep, std::min<size_t>(1, c.items.size())));
  softmax(c);
}

float mirostat_update(float mu, float tau, float eta, float p_selected) {
  const float surprise = -std::log2(p_selected);
  return mu - eta * (surprise - tau);
}

}  // namespace tessera
