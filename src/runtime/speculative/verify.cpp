// The acceptance rule of speculative sampling and the verification of a whole draft.
#include <algorithm>

#include "tessera/speculative.h"

namespace tessera {
namespace {

/// Index drawn by inverse CDF from the non-negative weights `w` with uniform `v`: the
/// first whose cumulated weight exceeds v * total (the last positive one when rounding
/// leaves the sum short). -1 when every weight is 0.
int64_t draw_index(std::span<const double> w, double v) {
  double total = 0.0;
  for (double x : w) total += x;
  if (!(total > 0.0)) return -1;
  const double target = v * total;
  double cum = 0.0;
  int64_t last = -1;
  for (size_t i = 0; i < w.size(); ++i) {
    if (!(w[i] > 0.0)) continue;
    cum += w[i];
    last = int64_t(i);
    if (cum > target) break;
  }
  return last;
}

double uniform(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

}  // namespace

TokenId speculative_pick(std::span<const float> p, std::span<const Candidate> q, TokenId x, double u, double v,
                         bool& accepted) {
  double q_x = q.empty() ? 1.0 : 0.0;
  for (const Candidate& c : q) {
    if (c.id == x) q_x = c.p;
  }
  const double p_x = x >= 0 && size_t(x) < p.size() ? p[size_t(x)] : 0.0;
  accepted = u * q_x < p_x;  // u < min(1, p/q); q_x = 0 never drew x, so no special case
  if (accepted) return x;
  // The residual max(0, p - q): where the target wants more than the draft offered.
  std::vector<double> residual(p.begin(), p.end());
  if (q.empty()) {
    if (size_t(x) < residual.size()) residual[size_t(x)] = 0.0;
  } else {
    for (const Candidate& c : q) {
      if (size_t(c.id) < residual.size()) residual[size_t(c.id)] = std::max(0.0, residual[size_t(c.id)] - c.p);
    }
  }
  int64_t i = draw_index(residual, v);
  if (i < 0) {  // p <= q everywhere (p == q up to rounding): p itself is the residual
    const std::vector<double> whole(p.begin(), p.end());
    i = draw_index(whole, v);
  }
  return TokenId(i);
}

Result<Verdict> verify_draft(SamplerChain& chain, std::span<const std::span<const float>> logits,
                             const Draft& draft, std::mt19937_64& rng,
                             const std::function<bool(TokenId)>& ends) {
  if (logits.size() != draft.tokens.size() + 1 || (!draft.q.empty() && draft.q.size() != draft.tokens.size())) {
    return Status::error("speculative: " + std::to_string(logits.size()) + " rows of logits for a draft of " +
                         std::to_string(draft.tokens.size()) + " tokens (one more is needed)");
  }
  Verdict out;
  Candidates c;
  std::vector<float> p;
  for (size_t i = 0; i < logits.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(chain.distribution(logits[i], c));
    p.assign(logits[i].size(), 0.0f);
    for (const Candidate& t : c.items) p[size_t(t.id)] = t.p;
    TokenId token = -1;
    bool accepted = false;
    const double u = uniform(rng), v = uniform(rng);
    if (i < draft.tokens.size()) {
      const std::span<const Candidate> q = draft.q.empty() ? std::span<const Candidate>() : draft.q[i];
      token = speculative_pick(p, q, draft.tokens[i], u, v, accepted);
    } else {  // every drafted token accepted: one more from p
      std::vector<double> whole(p.begin(), p.end());
      token = TokenId(draw_index(whole, v));
    }
    if (token < 0) return Status::error("speculative: the target's distribution is empty");
    out.tokens.push_back(token);
    out.n_accepted += accepted ? 1 : 0;
    if (ends && ends(token)) {
      out.stopped = true;
      break;
    }
    TESSERA_RETURN_IF_ERROR(chain.accept(token));
    if (!accepted || chain.done()) break;
  }
  return out;
}

}  // namespace tessera
