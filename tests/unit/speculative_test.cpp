// Speculative decoding's rule and drafting, without a model: the accept/reject rule keeps
// the target's distribution (chi-square tests on a 6-token vocabulary, fixed seeds, so
// they are deterministic), verify_draft walks a whole draft with a sampler chain, and the
// lookup drafter drafts from n-gram counts with llama.cpp's thresholds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "tessera/speculative.h"

namespace tessera {
namespace {

double uniform(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

/// Draws an index from the (dense) distribution `w` by inverse CDF.
TokenId draw(std::span<const float> w, std::mt19937_64& rng) {
  const double u = uniform(rng);
  double cum = 0.0;
  for (size_t i = 0; i < w.size(); ++i) {
    cum += w[i];
    if (u < cum) return TokenId(i);
  }
  return TokenId(w.size() - 1);
}

std::vector<Candidate> sparse(std::span<const float> q) {
  std::vector<Candidate> out;
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i] > 0.0f) out.push_back({TokenId(i), 0.0f, q[i]});
  }
  return out;
}

/// Pearson's chi-square of `counts` against the probabilities `p` (cells with p = 0 must
/// have no count: any count there is an infinite statistic).
double chi_square(std::span<const int64_t> counts, std::span<const float> p) {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  double chi = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double expected = double(n) * p[i];
    if (expected == 0.0) {
      if (counts[i] != 0) return INFINITY;
      continue;
    }
    chi += (double(counts[i]) - expected) * (double(counts[i]) - expected) / expected;
  }
  return chi;
}

/// The chi-square value exceeded with probability 1e-4 for `df` degrees of freedom
/// (Wilson-Hilferty). With fixed seeds a test either always passes or always fails; this
/// bound makes a correct rule pass for all but a 1e-4 share of seeds.
double chi_square_bound(int df) {
  const double z = 3.719;  // the normal quantile of 1 - 1e-4
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

int degrees(std::span<const float> p) {
  int n = 0;
  for (float x : p) n += x > 0.0f;
  return n - 1;
}

constexpr int64_t kTrials = 100000;

struct PickCounts {
  std::vector<int64_t> out;      // tokens produced
  std::vector<int64_t> drafted;  // tokens drafted (x itself: the negative control)
  int64_t accepted = 0;
};

/// kTrials picks with x ~ q (or x fixed when q is empty).
PickCounts run_picks(std::span<const float> p, std::span<const float> q, TokenId fixed_x, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<Candidate> q_sparse = sparse(q);
  PickCounts c{std::vector<int64_t>(p.size()), std::vector<int64_t>(p.size()), 0};
  for (int64_t t = 0; t < kTrials; ++t) {
    const TokenId x = q.empty() ? fixed_x : draw(q, rng);
    bool accepted = false;
    const double u = uniform(rng), v = uniform(rng);
    const TokenId y = speculative_pick(p, q.empty() ? std::span<const Candidate>() : q_sparse, x, u, v, accepted);
    ++c.out[size_t(y)];
    ++c.drafted[size_t(x)];
    c.accepted += accepted;
    if (accepted) {
      EXPECT_EQ(y, x);
    }
  }
  return c;
}

// The target p and a draft q that disagree: q puts mass where p has none (token 3), and
// p where q has none (token 1 gets little from q).
const std::vector<float> kP = {0.05f, 0.30f, 0.10f, 0.00f, 0.35f, 0.20f};
const std::vector<float> kQ = {0.40f, 0.05f, 0.25f, 0.10f, 0.15f, 0.05f};

TEST(SpeculativeRule, SampledDraftKeepsTheTargetDistribution) {
  const PickCounts c = run_picks(kP, kQ, -1, 1234);
  EXPECT_LT(chi_square(c.out, kP), chi_square_bound(degrees(kP)));
  // Without the rule the drafted tokens follow q: the same test throws them out.
  EXPECT_GT(chi_square(c.drafted, kP), 100 * chi_square_bound(degrees(kP)));
  // The acceptance rate is sum_x min(p(x), q(x)) = 0.05+0.05+0.10+0+0.15+0.05 = 0.40.
  const double rate = double(c.accepted) / double(kTrials);
  EXPECT_NEAR(rate, 0.40, 4 * std::sqrt(0.4 * 0.6 / double(kTrials)));
}

TEST(SpeculativeRule, DeterministicDraftIsAcceptedWithItsTargetProbability) {
  // A lookup draft: q one-hot on x. Accepted with probability p(x), else p without x.
  for (TokenId x : {1, 3, 4}) {
    const PickCounts c = run_picks(kP, {}, x, 99 + uint64_t(x));
    EXPECT_LT(chi_square(c.out, kP), chi_square_bound(degrees(kP))) << "x = " << x;
    const double rate = double(c.accepted) / double(kTrials), px = kP[size_t(x)];
    EXPECT_NEAR(rate, px, 4 * std::sqrt(px * (1 - px) / double(kTrials)) + 1e-9) << "x = " << x;
  }
}

TEST(SpeculativeRule, GreedyTargetAlwaysGivesItsToken) {
  const std::vector<float> greedy = {0, 0, 1, 0, 0, 0};
  std::mt19937_64 rng(7);
  for (int t = 0; t < 1000; ++t) {
    bool accepted = false;
    const TokenId x = draw(kQ, rng);
    const std::vector<Candidate> q = sparse(kQ);
    EXPECT_EQ(speculative_pick(greedy, q, x, uniform(rng), uniform(rng), accepted), 2);
    EXPECT_EQ(accepted, x == 2);
    EXPECT_EQ(speculative_pick(greedy, {}, x, uniform(rng), uniform(rng), accepted), 2);
    EXPECT_EQ(accepted, x == 2);
  }
}

// ---- verify_draft with a sampler chain -----------------------------------------------

SamplerChain make_chain(float temperature, int32_t top_k, float repeat_penalty = 1.0f) {
  SamplerParams sp;
  sp.temperature = temperature;
  sp.top_k = top_k;
  sp.top_p = 1.0f;
  sp.min_p = 0.0f;
  sp.repeat_penalty = repeat_penalty;
  sp.seed = 5;
  Result<SamplerChain> chain = SamplerChain::create(sp, 6);
  EXPECT_TRUE(chain.is_ok());
  return std::move(*chain);
}

std::vector<float> dense(const Candidates& c, size_t n) {
  std::vector<float> p(n);
  for (const Candidate& t : c.items) p[size_t(t.id)] = t.p;
  return p;
}

TEST(SpeculativeVerify, DistributionIsWhatTheChainDraws) {
  SamplerChain chain = make_chain(0.7f, 4);
  const std::vector<float> logits = {1.0f, 2.5f, 0.3f, 2.0f, -1.0f, 1.7f};
  Candidates c;
  ASSERT_TRUE(chain.distribution(logits, c).is_ok());
  const std::vector<float> p = dense(c, 6);
  EXPECT_EQ(p[2], 0.0f);  // top-k 4 leaves tokens 1, 3, 5, 0
  EXPECT_EQ(p[4], 0.0f);
  std::vector<int64_t> counts(6);
  for (int64_t t = 0; t < kTrials / 4; ++t) ++counts[size_t(*chain.sample(logits))];
  EXPECT_LT(chi_square(counts, p), chi_square_bound(degrees(p)));
  // Greedy: all the mass on the largest logit.
  SamplerChain greedy = make_chain(0.0f, 0);
  ASSERT_TRUE(greedy.distribution(logits, c).is_ok());
  EXPECT_EQ(dense(c, 6), (std::vector<float>{0, 1, 0, 0, 0, 0}));
}

TEST(SpeculativeVerify, EveryPositionKeepsTheTargetDistribution) {
  // Three positions with fixed logits (the target does not look back here), a two-token
  // draft sampled from q0, q1: token i of the verdict, when there is one, follows p_i;
  // the third one is the bonus drawn when both were accepted.
  SamplerChain chain = make_chain(0.8f, 5);
  const std::vector<std::vector<float>> rows = {
      {0.5f, 1.5f, 0.2f, -0.5f, 1.9f, 1.0f}, {2.0f, 0.1f, 1.2f, 1.1f, -0.3f, 0.4f}, {0.0f, 0.3f, 0.6f, 0.9f, 1.2f, 1.5f}};
  const std::vector<std::vector<float>> q = {{0.1f, 0.2f, 0.1f, 0.1f, 0.4f, 0.1f}, {0.5f, 0.05f, 0.2f, 0.2f, 0.0f, 0.05f}};
  std::vector<std::vector<float>> p;
  for (const auto& r : rows) {
    Candidates c;
    ASSERT_TRUE(chain.distribution(r, c).is_ok());
    p.push_back(dense(c, 6));
  }
  const std::vector<std::span<const float>> logits(rows.begin(), rows.end());
  std::vector<std::vector<int64_t>> counts(3, std::vector<int64_t>(6));
  std::mt19937_64 draft_rng(11), rng(12);
  int64_t accepted = 0;
  for (int64_t t = 0; t < kTrials / 2; ++t) {
    Draft d;
    for (const auto& qi : q) {
      d.tokens.push_back(draw(qi, draft_rng));
      d.q.push_back(sparse(qi));
    }
    Result<Verdict> v = verify_draft(chain, logits, d, rng, nullptr);
    ASSERT_TRUE(v.is_ok()) << v.status().message();
    ASSERT_GE(v->tokens.size(), 1u);
    ASSERT_EQ(v->tokens.size(), size_t(v->n_accepted) + 1);
    for (size_t i = 0; i < v->tokens.size(); ++i) ++counts[i][size_t(v->tokens[i])];
    accepted += v->n_accepted;
  }
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_LT(chi_square(counts[i], p[i]), chi_square_bound(degrees(p[i]))) << "position " << i;
  }
  EXPECT_GT(accepted, kTrials / 8);  // the draft is useful at all
}

TEST(SpeculativeVerify, LaterPositionsSeeTheAcceptedTokens) {
  // A greedy chain with a strong repeat penalty: after token 1 is accepted at position 0,
  // position 1 (whose largest logit is token 1's) gives token 3, as plain decoding does.
  SamplerChain chain = make_chain(0.0f, 0, 100.0f);
  const std::vector<std::vector<float>> rows = {{0, 5, 0, 1, 0, 0}, {0, 5, 0, 4, 0, 0}, {0, 0, 0, 0, 5, 0}};
  const std::vector<std::span<const float>> logits(rows.begin(), rows.end());
  std::mt19937_64 rng(1);
  Draft d{{1, 1}, {}};
  Result<Verdict> v = verify_draft(chain, logits, d, rng, nullptr);
  ASSERT_TRUE(v.is_ok());
  EXPECT_EQ(v->tokens, (std::vector<TokenId>{1, 3}));
  EXPECT_EQ(v->n_accepted, 1);
  // An end-of-generation token ends the verdict (it is reported, not accepted).
  SamplerChain fresh = make_chain(0.0f, 0);
  d = Draft{{1, 3}, {}};
  v = verify_draft(fresh, logits, d, rng, [](TokenId t) { return t == 1; });
  ASSERT_TRUE(v.is_ok());
  EXPECT_EQ(v->tokens, (std::vector<TokenId>{1}));
  EXPECT_TRUE(v->stopped);
  // A mismatch of logits rows and draft is an error, not a read past the end.
  EXPECT_FALSE(verify_draft(fresh, std::span(logits).first(2), d, rng, nullptr).is_ok());
}

// ---- lookup drafting -----------------------------------------------------------------

std::vector<TokenId> lookup(const std::vector<TokenId>& history, int n_max) {
  std::unique_ptr<Drafter> d = make_lookup_drafter();
  Draft out;
  EXPECT_TRUE(d->draft(history, n_max, out).is_ok());
  EXPECT_TRUE(out.q.empty());
  return out.tokens;
}

TEST(SpeculativeLookup, DraftsTheContinuationOfARepeatedNgram) {
  // "10 11 12 13 14" seen once; the sequence ends with "10 11 12" again: the 3-gram has
  // one continuation (13), enough for n = 3 (1 sample, 50 %), and so on.
  EXPECT_EQ(lookup({10, 11, 12, 13, 14, 20, 10, 11, 12}, 3), (std::vector<TokenId>{13, 14, 20}));
  EXPECT_EQ(lookup({10, 11, 12, 13, 14, 20, 10, 11, 12}, 16),
            (std::vector<TokenId>{13, 14, 20, 10, 11, 12, 13, 14, 20, 10, 11, 12, 13, 14, 20, 10}));
  // A single token seen once before is not enough (n = 1 needs 2 samples at 66 %).
  EXPECT_TRUE(lookup({7, 8, 9, 7}, 4).empty());
  // Seen twice with the same continuation: drafted.
  EXPECT_EQ(lookup({7, 8, 5, 7, 8, 6, 7}, 1), (std::vector<TokenId>{8}));
  // Two continuations at 50 % each: below the 66 % of n = 1.
  EXPECT_TRUE(lookup({7, 8, 5, 7, 9, 6, 7}, 1).empty());
}

TEST(SpeculativeLookup, FollowsAGrowingHistoryAndStartsAfreshOnAnother) {
  std::unique_ptr<Drafter> d = make_lookup_drafter();
  Draft out;
  std::vector<TokenId> h = {1, 2, 3, 4, 5};
  ASSERT_TRUE(d->draft(h, 4, out).is_ok());
  EXPECT_TRUE(out.tokens.empty());
  h.insert(h.end(), {1, 2, 3});
  ASSERT_TRUE(d->draft(h, 2, out).is_ok());
  EXPECT_EQ(out.tokens, (std::vector<TokenId>{4, 5}));
  // Another history (not an extension): the old counts are gone.
  const std::vector<TokenId> other = {5, 6, 1, 2, 3};
  ASSERT_TRUE(d->draft(other, 2, out).is_ok());
  EXPECT_TRUE(out.tokens.empty());
}

/// A drafter that proposes fixed tokens.
class FixedDrafter : public Drafter {
 public:
  explicit FixedDrafter(std::vector<TokenId> t) : tokens_(std::move(t)) {}
  Status draft(std::span<const TokenId>, int n_max, Draft& out) override {
    out = Draft{};
    out.tokens.assign(tokens_.begin(), tokens_.begin() + std::min<ptrdiff_t>(n_max, ptrdiff_t(tokens_.size())));
    return Status::ok();
  }

 private:
  std::vector<TokenId> tokens_;
};

TEST(SpeculativeDraft, CutAtTheVocabularyAndDroppedBelowTheMinimum) {
  FixedDrafter fixed({3, 4, 9, 5});
  const std::vector<TokenId> h = {1, 2};
  SpeculativeParams params;
  Result<Draft> d = make_draft(fixed, h, 16, params, 6);  // 9 is outside a vocabulary of 6
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->tokens, (std::vector<TokenId>{3, 4}));
  params.n_min = 3;
  d = make_draft(fixed, h, 16, params, 6);
  ASSERT_TRUE(d.is_ok());
  EXPECT_TRUE(d->tokens.empty());
  params.n_min = 0;
  d = make_draft(fixed, h, 1, params, 100);
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->tokens, (std::vector<TokenId>{3}));
}

}  // namespace
}  // namespace tessera
