// The truncations (top-k, top-p, min-p, typical, tail-free) and temperature, with
// llama.cpp's semantics: each keeps a prefix (or a reordered subset) of the candidates.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "tessera/sampler.h"

namespace tessera {

void top_k(Candidates& c, int32_t k, size_t min_keep) {
  if (k <= 0) return;
  const size_t keep = std::min(std::max(static_cast<size_t>(k), min_keep), c.items.size());
  if (!c.sorted) {
    const auto by_logit = [](const Candidate& a, const Candidate& b) {
      return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    };
    std::partial_sort(c.items.begin(), c.items.begin() + static_cast<std::ptrdiff_t>(keep),
                      c.items.end(), by_logit);
    c.sorted = true;
  }
  c.items.resize(keep);
}

void top_p(Candidates& c, float p, size_t min_keep) {
  if (p >= 1.0f) return;
  softmax(c);
  float cum = 0.0f;
  for (size_t i = 0; i < c.items.size(); ++i) {
    cum += c.items[i].p;
    if (cum >= p && i + 1 >= min_keep) {
      c.items.resize(i + 1);
      return;
    }
  }
}

void min_p(Candidates& c, float p, size_t min_keep) {
  if (p <= 0.0f || c.items.empty()) return;
  sort_by_logit(c);
  // p_i >= p * p_max  <=>  logit_i >= logit_max + log(p)
  const float min_logit = c.items[0].logit + std::log(p);
  size_t i = 1;  // the first always stays
  while (i < c.items.size() && (c.items[i].logit >= min_logit || i < min_keep)) ++i;
  c.items.resize(i);
}

void typical(Candidates& c, float p, size_t min_keep) {
  if (p >= 1.0f || c.items.empty()) return;
  softmax(c);
  float entropy = 0.0f;
  for (const Candidate& t : c.items) {
    if (t.p > 0.0f) entropy -= t.p * std::log(t.p);
  }
  // Distance of each token's surprise from the entropy (forbidden tokens: infinite).
  std::vector<float> shifted(c.items.size());
  for (size_t i = 0; i < c.items.size(); ++i) {
    const float pi = c.items[i].p;
    shifted[i] =
        pi > 0.0f ? std::fabs(-std::log(pi) - entropy) : std::numeric_limits<float>::infinity();
  }
  std::vector<size_t> order(c.items.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return shifted[a] < shifted[b]; });
  size_t keep = order.size();
  float cum = 0.0f;
  for (size_t i = 0; i < order.size(); ++i) {
    cum += c.items[order[i]].p;
    if (cum > p && i + 1 >= min_keep) {
      keep = i + 1;
      break;
    }
  }
  std::vector<Candidate> kept(keep);
  for (size_t i = 0; i < keep; ++i) kept[i] = c.items[order[i]];
  c.items = std::move(kept);
  c.sorted = false;
}

void tail_free(Candidates& c, float z, size_t min_keep) {
  if (z >= 1.0f || c.items.size() <= 2) return;
  softmax(c);
  const size_t n = c.items.size();
  // |second differences| of the sorted probabilities, normalised to sum to 1.
  std::vector<float> d2(n - 2);
  float sum = 0.0f;
  for (size_t i = 0; i + 2 < n; ++i) {
    const float d1a = c.items[i].p - c.items[i + 1].p;
    const float d1b = c.items[i + 1].p - c.items[i + 2].p;
    d2[i] = std::fabs(d1a - d1b);
    sum += d2[i];
  }
  for (float& v : d2) v = sum > 1e-6f ? v / sum : 1.0f / static_cast<float>(d2.size());
  float cum = 0.0f;
  for (size_t i = 0; i < d2.size(); ++i) {
    cum += d2[i];
    if (cum > z && i >= min_keep) {
      c.items.resize(i);
      return;
    }
  }
}

void temperature(Candidates& c, float t) {
  if (t > 0.0f) {
    for (Candidate& item : c.items) item.logit /= t;
    return;
  }
  if (c.items.empty()) return;
  size_t best = 0;
  for (size_t i = 1; i < c.items.size(); ++i) {
    if (c.items[i].logit > c.items[best].logit) best = i;
  }
  for (size_t i = 0; i < c.items.size(); ++i) {
    if (i != best) c.items[i].logit = -std::numeric_limits<float>::infinity();
  }
}

}  // namespace tessera
