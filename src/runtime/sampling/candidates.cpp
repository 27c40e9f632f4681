// Candidates: building them from logits, ordering, softmax, and the final picks.
#include <algorithm>
#include <cmath>

#include "tessera/sampler.h"

namespace tessera {

Candidates Candidates::from_logits(std::span<const float> logits) {
  Candidates c;
  c.items.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i)
    c.items[i] = {static_cast<TokenId>(i), logits[i], 0.0f};
  c.n_vocab = static_cast<int32_t>(logits.size());
  return c;
}

TokenId argmax(std::span<const float> logits) {
  return static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

void sort_by_logit(Candidates& c) {
  if (c.sorted) return;
  std::stable_sort(c.items.begin(), c.items.end(),
                   [](const Candidate& a, const Candidate& b) { return a.logit > b.logit; });
  c.sorted = true;
}

void softmax(Candidates& c) {
  sort_by_logit(c);
  if (c.items.empty()) return;
  const float max_logit = c.items[0].logit;
  if (std::isinf(max_logit) && max_logit < 0) {  // nothing is allowed
    for (Candidate& t : c.items) t.p = 0.0f;
    return;
  }
  double sum = 0.0;
  for (Candidate& t : c.items) {
    t.p = std::exp(t.logit - max_logit);
    sum += t.p;
  }
  for (Candidate& t : c.items) t.p = static_cast<float>(t.p / sum);
}

void pick_greedy(Candidates& c) {
  c.selected = -1;
  for (size_t i = 0; i < c.items.size(); ++i) {
    if (c.selected < 0 || c.items[i].logit > c.items[static_cast<size_t>(c.selected)].logit) {
      c.selected = static_cast<int64_t>(i);
    }
  }
}

void pick_at(Candidates& c, double u) {
  softmax(c);
  c.selected = -1;
  double total = 0.0;
  for (const Candidate& t : c.items) total += t.p;
  if (!(total > 0.0)) return;
  const double target = u * total;
  double cum = 0.0;
  for (size_t i = 0; i < c.items.size(); ++i) {
    if (c.items[i].p <= 0.0f) continue;
    cum += c.items[i].p;
    c.selected = static_cast<int64_t>(i);  // the last positive one if rounding leaves cum < target
    if (cum > target) return;
  }
}

}  // namespace tessera
