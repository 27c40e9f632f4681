// The sampler steps on hand-made distributions (expected values worked out in the
// comments), the chain's order, seeded reproducibility and mirostat's state.
#include "tessera/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "runtime/sampling/mirostat_step.h"

namespace tessera {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

/// Candidates whose softmax is `probs` (logit = ln p), ids 0, 1, 2, ...
Candidates from_probs(const std::vector<float>& probs) {
  std::vector<float> logits;
  for (float p : probs) logits.push_back(std::log(p));
  return Candidates::from_logits(logits);
}

std::vector<TokenId> ids(const Candidates& c) {
  std::vector<TokenId> out;
  for (const Candidate& t : c.items) out.push_back(t.id);
  return out;
}

TEST(SamplerSteps, SoftmaxSortsAndNormalises) {
  // logits ln1, ln4, ln2, ln3 -> sorted ids 1, 3, 2, 0 with p 0.4, 0.3, 0.2, 0.1
  Candidates c = from_probs({1, 4, 2, 3});
  softmax(c);
  EXPECT_TRUE(c.sorted);
  EXPECT_EQ(ids(c), (std::vector<TokenId>{1, 3, 2, 0}));
  const float expected[] = {0.4f, 0.3f, 0.2f, 0.1f};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(c.items[i].p, expected[i], 1e-6f);
  // Forbidden tokens get p = 0; all forbidden gives zeros, not NaN.
  Candidates f = Candidates::from_logits(std::vector<float>{0.0f, -kInf, 0.0f});
  softmax(f);
  EXPECT_FLOAT_EQ(f.items[0].p, 0.5f);
  EXPECT_FLOAT_EQ(f.items[2].p, 0.0f);
  Candidates none = Candidates::from_logits(std::vector<float>{-kInf, -kInf});
  softmax(none);
  EXPECT_EQ(none.items[0].p, 0.0f);
}

TEST(SamplerSteps, ArgmaxTakesTheLowestIndexAmongEquals) {
  EXPECT_EQ(argmax(std::vector<float>{1, 5, 2, 5}), 1);
  Candidates c = Candidates::from_logits(std::vector<float>{1, 5, 2, 5});
  pick_greedy(c);
  EXPECT_EQ(c.selected, 1);
}

TEST(SamplerSteps, TopK) {
  Candidates c = Candidates::from_logits(std::vector<float>{1, 4, 2, 3});
  top_k(c, 2);  // the two largest logits: 4 (id 1), 3 (id 3)
  EXPECT_EQ(ids(c), (std::vector<TokenId>{1, 3}));
  EXPECT_TRUE(c.sorted);
  Candidates all = Candidates::from_logits(std::vector<float>{1, 4, 2, 3});
  top_k(all, 0);  // off
  EXPECT_EQ(all.items.size(), 4u);
  Candidates keep3 = Candidates::from_logits(std::vector<float>{1, 4, 2, 3});
  top_k(keep3, 2, /*min_keep=*/3);
  EXPECT_EQ(ids(keep3), (std::vector<TokenId>{1, 3, 2}));
}

TEST(SamplerSteps, TopP) {
  // p = 0.4, 0.3, 0.2, 0.1 (ids 0..3). Cumulated: 0.4, 0.7, 0.9, 1.0.
  Candidates c = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
  top_p(c, 0.6f);  // 0.7 >= 0.6 at the second token
  EXPECT_EQ(ids(c), (std::vector<TokenId>{0, 1}));
  Candidates d = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
  top_p(d, 0.75f);  // 0.7 < 0.75, 0.9 >= 0.75: three tokens
  EXPECT_EQ(ids(d), (std::vector<TokenId>{0, 1, 2}));
  Candidates e = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
  top_p(e, 0.1f, /*min_keep=*/2);  // 0.4 >= 0.1 already, but at least two stay
  EXPECT_EQ(ids(e), (std::vector<TokenId>{0, 1}));
  Candidates off = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
  top_p(off, 1.0f);
  EXPECT_EQ(off.items.size(), 4u);
}

TEST(SamplerSteps, MinP) {
  // p_max = 0.4: min_p 0.3 keeps p >= 0.12 (0.4, 0.3, 0.2); 0.8 keeps p >= 0.32 (0.4).
  Candidates c = from_probs({0.1f, 0.4f, 0.2f, 0.3f});
  min_p(c, 0.3f);
  EXPECT_EQ(ids(c), (std::vector<TokenId>{1, 3, 2}));
  Candidates d = from_probs({0.1f, 0.4f, 0.2f, 0.3f});
  min_p(d, 0.8f);
  EXPECT_EQ(ids(d), (std::vector<TokenId>{1}));
  Candidates e = from_probs({0.1f, 0.4f, 0.2f, 0.3f});
  min_p(e, 0.8f, /*min_keep=*/2);
  EXPECT_EQ(ids(e), (std::vector<TokenId>{1, 3}));
}

TEST(SamplerSteps, TypicalKeepsTokensNearTheEntropy) {
  // p = 0.4, 0.3, 0.2, 0.1: entropy H = -sum p ln p = 1.27985.
  // |-ln p - H| = 0.36356, 0.07588, 0.32958, 1.02273 -> order ids 1, 2, 0, 3.
  // Cumulated mass in that order: 0.3, 0.5 > 0.45 -> keep ids 1, 2 (the likeliest goes).
  Candidates c = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
  typical(c, 0.45f);
  EXPECT_EQ(ids(c), (std::vector<TokenId>{1, 2}));
  EXPECT_FALSE(c.sorted);
  Candidates d = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
  typical(d, 0.85f);  // 0.3, 0.5, 0.9 > 0.85 -> ids 1, 2, 0
  EXPECT_EQ(ids(d), (std::vector<TokenId>{1, 2, 0}));
}

TEST(SamplerSteps, TailFree) {
  // p = 0.45, 0.3, 0.15, 0.07, 0.03. First differences 0.15, 0.15, 0.08, 0.04; second
  // 0, 0.07, 0.04; normalised 0, 0.636, 0.364; cumulated 0, 0.636, 1.0.
  // z = 0.5: exceeded at i = 1 -> keep 1 token; z = 0.9: at i = 2 -> keep 2.
  Candidates c = from_probs({0.45f, 0.3f, 0.15f, 0.07f, 0.03f});
  tail_free(c, 0.5f);
  EXPECT_EQ(ids(c), (std::vector<TokenId>{0}));
  Candidates d = from_probs({0.45f, 0.3f, 0.15f, 0.07f, 0.03f});
  tail_free(d, 0.9f);
  EXPECT_EQ(ids(d), (std::vector<TokenId>{0, 1}));
  Candidates off = from_probs({0.45f, 0.3f, 0.15f, 0.07f, 0.03f});
  tail_free(off, 1.0f);
  EXPECT_EQ(off.items.size(), 5u);
}

TEST(SamplerSteps, Temperature) {
  Candidates c = Candidates::from_logits(std::vector<float>{1.0f, -2.0f});
  temperature(c, 0.5f);
  EXPECT_FLOAT_EQ(c.items[0].logit, 2.0f);
  EXPECT_FLOAT_EQ(c.items[1].logit, -4.0f);
  Candidates z = Candidates::from_logits(std::vector<float>{1.0f, 3.0f, 2.0f});
  temperature(z, 0.0f);  // only the largest stays finite
  EXPECT_EQ(z.items[0].logit, -kInf);
  EXPECT_FLOAT_EQ(z.items[1].logit, 3.0f);
  EXPECT_EQ(z.items[2].logit, -kInf);
}

TEST(SamplerSteps, PenaltiesFollowLlamaCpp) {
  // recent = 0, 1, 1, 2; repeat 2, frequency 0.5, presence 0.25:
  // id 0 (count 1, logit 2):    2 / 2 - 1 * 0.5 - 0.25 = 0.25
  // id 1 (count 2, logit -1):  -1 * 2 - 2 * 0.5 - 0.25 = -3.25
  // id 2 (count 1, logit 0.5): 0.5 / 2 - 0.5 - 0.25 = -0.5
  // id 3 (absent, logit 3):    3
  Candidates c = Candidates::from_logits(std::vector<float>{2.0f, -1.0f, 0.5f, 3.0f});
  const TokenId recent[] = {0, 1, 1, 2};
  apply_penalties(c, recent, 2.0f, 0.5f, 0.25f);
  EXPECT_FLOAT_EQ(c.items[0].logit, 0.25f);
  EXPECT_FLOAT_EQ(c.items[1].logit, -3.25f);
  EXPECT_FLOAT_EQ(c.items[2].logit, -0.5f);
  EXPECT_FLOAT_EQ(c.items[3].logit, 3.0f);
  // The repeat penalty applies once, whatever the count: 3 / 1.5 = 2.
  Candidates d = Candidates::from_logits(std::vector<float>{3.0f});
  const TokenId thrice[] = {0, 0, 0};
  apply_penalties(d, thrice, 1.5f, 0.0f, 0.0f);
  EXPECT_FLOAT_EQ(d.items[0].logit, 2.0f);
}

TEST(SamplerSteps, LogitBias) {
  Candidates c = Candidates::from_logits(std::vector<float>{1.0f, 2.0f, 3.0f});
  const LogitBias biases[] = {{0, 1.5f}, {2, -kInf}};
  apply_logit_bias(c, biases);
  EXPECT_FLOAT_EQ(c.items[0].logit, 2.5f);
  EXPECT_FLOAT_EQ(c.items[1].logit, 2.0f);
  EXPECT_EQ(c.items[2].logit, -kInf);
}

TEST(SamplerSteps, ParseLogitBias) {
  Result<LogitBias> a = parse_logit_bias("15043+1.5");
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  EXPECT_EQ(a->token, 15043);
  EXPECT_FLOAT_EQ(a->bias, 1.5f);
  Result<LogitBias> b = parse_logit_bias("2-inf");
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->token, 2);
  EXPECT_EQ(b->bias, -kInf);
  Result<LogitBias> c = parse_logit_bias("7-0.25");
  ASSERT_TRUE(c.is_ok());
  EXPECT_FLOAT_EQ(c->bias, -0.25f);
  for (const char* bad :
       {"", "abc", "12", "12*3", "12+", "12+x", "-1+2", "12+1.5x", "12+-1", "12+nan"}) {
    EXPECT_FALSE(parse_logit_bias(bad).is_ok()) << bad;
  }
  EXPECT_NE(parse_logit_bias("12").status().message().find("'12'"), std::string::npos);
}

TEST(SamplerSteps, PickAtInvertsTheCumulativeDistribution) {
  // p = 0.5, 0.3, 0.2: u in [0, 0.5) -> id 0, [0.5, 0.8) -> id 1, [0.8, 1) -> id 2.
  const std::pair<double, TokenId> cases[] = {{0.0, 0},  {0.1, 0},  {0.6, 1},
                                              {0.75, 1}, {0.85, 2}, {0.999, 2}};
  for (const auto& [u, expected] : cases) {
    Candidates c = from_probs({0.5f, 0.3f, 0.2f});
    pick_at(c, u);
    ASSERT_GE(c.selected, 0);
    EXPECT_EQ(c.items[static_cast<size_t>(c.selected)].id, expected) << "u = " << u;
  }
  // Forbidden tokens are never drawn, even at u = 0.
  Candidates f = Candidates::from_logits(std::vector<float>{-kInf, 0.0f});
  pick_at(f, 0.0);
  EXPECT_EQ(f.items[static_cast<size_t>(f.selected)].id, 1);
  Candidates none = Candidates::from_logits(std::vector<float>{-kInf, -kInf});
  pick_at(none, 0.5);
  EXPECT_EQ(none.selected, -1);
}

TEST(SamplerSteps, DrawUsesTheTop53BitsOfMt19937_64) {
  // The documented draw: u = (mt19937_64(seed)() >> 11) / 2^53, then pick_at(u).
  std::mt19937_64 rng(7);
  auto step = make_draw_step(7);
  for (int i = 0; i < 20; ++i) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    const TokenId expected = u < 0.5 ? 0 : u < 0.8 ? 1 : 2;
    Candidates c = from_probs({0.5f, 0.3f, 0.2f});
    step->apply(c);
    ASSERT_GE(c.selected, 0);
    EXPECT_EQ(c.items[static_cast<size_t>(c.selected)].id, expected)
        << "draw " << i << ", u = " << u;
  }
}

TEST(SamplerSteps, MirostatV1TopKSize) {
  // p = 0.4, 0.3, 0.2, 0.1: t_i = ln 2, ln 1.5, ln 4/3 and b_i = ln 4/3, ln 1.5, ln 2 give
  // s = sum t b / sum t^2 = 0.77405, eps = s - 1. k = (eps 2^mu / (1 - 4^-eps))^(1/s):
  // mu = 1 -> 1.30, mu = 2 -> 3.19, mu = 3 -> 7.82.
  Candidates c = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
  softmax(c);
  EXPECT_EQ(mirostat_v1_k(c, 1.0f, 100, 4), 1);
  EXPECT_EQ(mirostat_v1_k(c, 2.0f, 100, 4), 3);
  EXPECT_EQ(mirostat_v1_k(c, 3.0f, 100, 4), 7);
}

TEST(SamplerSteps, MirostatV2Truncation) {
  // Surprises -log2 p: 1.32, 1.74, 2.32, 3.32. mu = 2 keeps the first two, renormalised:
  // 0.4 / 0.7 = 0.571429, 0.3 / 0.7 = 0.428571.
  Candidates c = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
  mirostat_v2_truncate(c, 2.0f);
  ASSERT_EQ(ids(c), (std::vector<TokenId>{0, 1}));
  EXPECT_NEAR(c.items[0].p, 0.571429f, 1e-5f);
  EXPECT_NEAR(c.items[1].p, 0.428571f, 1e-5f);
  Candidates tiny = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
  mirostat_v2_truncate(tiny, 0.5f);  // nothing under the bound: the first stays
  EXPECT_EQ(ids(tiny), (std::vector<TokenId>{0}));
}

TEST(SamplerSteps, MirostatUpdate) {
  // p = 0.5: surprise 1 bit; tau 3 -> error -2; mu = 2 - 0.1 * -2 = 2.2.
  EXPECT_FLOAT_EQ(mirostat_update(2.0f, 3.0f, 0.1f, 0.5f), 2.2f);
  EXPECT_FLOAT_EQ(mirostat_update(2.0f, 0.5f, 1.0f, 0.25f), 0.5f);  // 2 - (2 - 0.5)
}

TEST(SamplerSteps, MirostatStepUpdatesMuOnAccept) {
  sampling::MirostatStep step(2, /*tau=*/3.0f, /*eta=*/0.1f, 100);
  EXPECT_FLOAT_EQ(step.mu(), 6.0f);  // 2 tau
  Candidates c = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
  step.apply(c);  // every surprise (at most 3.32) is under 6: all four stay
  EXPECT_EQ(c.items.size(), 4u);
  ASSERT_TRUE(step.accept(0, false).is_ok());
  // p(0) = 0.4: surprise 1.32193; mu = 6 - 0.1 * (1.32193 - 3) = 6.16781
  EXPECT_NEAR(step.mu(), 6.16781f, 1e-4f);
  ASSERT_TRUE(step.accept(0, false).is_ok());  // no apply() since: nothing to learn from
  EXPECT_NEAR(step.mu(), 6.16781f, 1e-4f);
  ASSERT_TRUE(step.accept(1, true).is_ok());  // prompt tokens do not count
  EXPECT_NEAR(step.mu(), 6.16781f, 1e-4f);
  step.reset();
  EXPECT_FLOAT_EQ(step.mu(), 6.0f);

  // mu drives the truncation: tau 1 -> mu 2 keeps two of the four; v1 with mu 2 keeps 3.
  sampling::MirostatStep v2(2, 1.0f, 0.0f, 100);
  Candidates d = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
  v2.apply(d);
  EXPECT_EQ(ids(d), (std::vector<TokenId>{0, 1}));
  sampling::MirostatStep v1(1, 1.0f, 0.0f, 100);
  Candidates e = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
  v1.apply(e);
  EXPECT_EQ(ids(e), (std::vector<TokenId>{0, 1, 2}));
}

TEST(SamplerSteps, PenaltyHistoryKeepsTheLastN) {
  auto step =
      make_penalties_step(/*last_n=*/2, /*repeat=*/1.0f, /*frequency=*/1.0f, /*presence=*/0.0f);
  const TokenId prompt[] = {0};
  for (TokenId t : prompt) ASSERT_TRUE(step->accept(t, true).is_ok());  // the prompt counts
  ASSERT_TRUE(step->accept(1, false).is_ok());
  ASSERT_TRUE(step->accept(1, false).is_ok());  // history: 1, 1 (0 fell out)
  Candidates c = Candidates::from_logits(std::vector<float>{5.0f, 5.0f, 5.0f});
  step->apply(c);
  EXPECT_FLOAT_EQ(c.items[0].logit, 5.0f);
  EXPECT_FLOAT_EQ(c.items[1].logit, 3.0f);  // 5 - 2 * 1
  EXPECT_FLOAT_EQ(c.items[2].logit, 5.0f);
  step->reset();
  Candidates d = Candidates::from_logits(std::vector<float>{5.0f, 5.0f});
  step->apply(d);
  EXPECT_FLOAT_EQ(d.items[1].logit, 5.0f);
}

/// A do-nothing step with a name, to see where the chain puts the grammar.
class NamedStep : public SamplerStep {
 public:
  std::string name() const override { return "grammar"; }
  void apply(Candidates&) override {}
};

TEST(SamplerChain, BuildsTheUsualOrder) {
  SamplerParams p;
  p.logit_bias = {{1, 1.0f}};
  p.repeat_penalty = 1.1f;
  p.top_k = 10;
  p.tfs_z = 0.9f;
  p.typical_p = 0.9f;
  p.top_p = 0.9f;
  p.min_p = 0.1f;
  p.temperature = 0.7f;
  Result<SamplerChain> chain = SamplerChain::create(p, 8, std::make_unique<NamedStep>());
  ASSERT_TRUE(chain.is_ok()) << chain.status().message();
  EXPECT_EQ(chain->names(),
            (std::vector<std::string>{"logit-bias", "penalties", "grammar", "top-k", "tail-free",
                                      "typical", "top-p", "min-p", "temperature", "draw"}));
  p.mirostat = 2;
  EXPECT_EQ(
      SamplerChain::create(p, 8)->names(),
      (std::vector<std::string>{"logit-bias", "penalties", "temperature", "mirostat-v2", "draw"}));
  p.mirostat = 1;
  EXPECT_EQ(SamplerChain::create(p, 8)->names().at(3), "mirostat-v1");
  p.temperature = 0.0f;
  EXPECT_EQ(SamplerChain::create(p, 8)->names(),
            (std::vector<std::string>{"logit-bias", "penalties", "greedy"}));
  // The defaults: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, no penalties.
  EXPECT_EQ(SamplerChain::create(SamplerParams{}, 8)->names(),
            (std::vector<std::string>{"top-k", "top-p", "min-p", "temperature", "draw"}));
}

TEST(SamplerChain, TruncatesBeforeTheTemperature) {
  // top-k 1 before a huge temperature: only the argmax is left to draw.
  SamplerParams p;
  p.top_k = 1;
  p.temperature = 100.0f;
  p.seed = 3;
  Result<SamplerChain> chain = SamplerChain::create(p, 4);
  ASSERT_TRUE(chain.is_ok());
  const std::vector<float> logits = {0.1f, 0.3f, 0.2f, 0.0f};
  for (int i = 0; i < 50; ++i) EXPECT_EQ(*chain->sample(logits), 1);
}

std::vector<TokenId> run_chain(SamplerChain& chain, int n) {
  std::vector<float> logits(50);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i)) * 2.0f;
  std::vector<TokenId> out;
  for (int i = 0; i < n; ++i) {
    Result<TokenId> t = chain.sample(logits);
    EXPECT_TRUE(t.is_ok());
    out.push_back(*t);
    EXPECT_TRUE(chain.accept(*t).is_ok());
  }
  return out;
}

TEST(SamplerChain, SeededRunsAreReproducible) {
  SamplerParams p;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.temperature = 1.5f;
  p.repeat_penalty = 1.2f;
  p.seed = 42;
  SamplerChain a = std::move(SamplerChain::create(p, 50)).value();
  SamplerChain b = std::move(SamplerChain::create(p, 50)).value();
  const std::vector<TokenId> first = run_chain(a, 100);
  EXPECT_EQ(run_chain(b, 100), first);
  a.reset();  // history and RNG back to the start
  EXPECT_EQ(run_chain(a, 100), first);
  p.seed = 43;
  SamplerChain c = std::move(SamplerChain::create(p, 50)).value();
  EXPECT_NE(run_chain(c, 100), first);
  // A flat enough distribution: many different tokens come out.
  std::vector<bool> seen(50, false);
  for (TokenId t : first) seen[static_cast<size_t>(t)] = true;
  EXPECT_GT(std::count(seen.begin(), seen.end(), true), 10);
}

TEST(SamplerChain, MirostatChainLearns) {
  SamplerParams p;
  p.mirostat = 2;
  p.mirostat_tau = 2.0f;
  p.mirostat_eta = 0.5f;
  p.temperature = 1.0f;
  p.seed = 5;
  SamplerChain a = std::move(SamplerChain::create(p, 50)).value();
  SamplerChain b = std::move(SamplerChain::create(p, 50)).value();
  EXPECT_EQ(run_chain(a, 60), run_chain(b, 60));
}

TEST(SamplerChain, Errors) {
  SamplerParams p;
  p.mirostat = 3;
  EXPECT_NE(SamplerChain::create(p, 10).status().message().find("mirostat"), std::string::npos);
  p = SamplerParams{};
  p.logit_bias = {{10, 1.0f}};
  EXPECT_NE(SamplerChain::create(p, 10).status().message().find("token 10"), std::string::npos);
  p = SamplerParams{};
  p.repeat_penalty = 0.0f;
  EXPECT_FALSE(SamplerChain::create(p, 10).is_ok());
  p = SamplerParams{};
  p.repeat_last_n = -2;
  EXPECT_FALSE(SamplerChain::create(p, 10).is_ok());

  // Every token forbidden: an error, not a token.
  p = SamplerParams{};
  p.logit_bias = {{0, -kInf}, {1, -kInf}};
  SamplerChain chain = std::move(SamplerChain::create(p, 2)).value();
  Result<TokenId> t = chain.sample(std::vector<float>{1.0f, 2.0f});
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find("forbidden"), std::string::npos);
  p.temperature = 0.0f;
  SamplerChain greedy = std::move(SamplerChain::create(p, 2)).value();
  EXPECT_FALSE(greedy.sample(std::vector<float>{1.0f, 2.0f}).is_ok());
  // A chain without a final step chooses nothing.
  SamplerChain empty;
  empty.add(make_top_k_step(1));
  EXPECT_NE(empty.sample(std::vector<float>{1.0f}).status().message().find("no step"),
            std::string::npos);
}

TEST(SamplerChain, GreedyEqualsArgmax) {
  SamplerParams p;
  p.temperature = 0.0f;
  SamplerChain chain = std::move(SamplerChain::create(p, 5)).value();
  const std::vector<float> logits = {0.5f, -1.0f, 2.5f, 2.5f, 0.0f};
  EXPECT_EQ(*chain.sample(logits), argmax(logits));
  EXPECT_EQ(*chain.sample(logits), 2);
}

TEST(SamplerChain, PickedFromIsTheDistributionAfterTheSteps) {
  // top-k 3 of probabilities .4 .3 .2 .1, temperature 1: the three left, renormalised
  // (.4/.9, .3/.9, .2/.9), most likely first; the fourth is gone.
  SamplerParams p;
  p.top_k = 3;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.temperature = 1.0f;
  p.seed = 9;
  SamplerChain chain = std::move(SamplerChain::create(p, 4)).value();
  SamplerChain same = std::move(SamplerChain::create(p, 4)).value();
  const std::vector<float> logits = {std::log(0.3f), std::log(0.1f), std::log(0.4f), std::log(0.2f)};
  for (int i = 0; i < 20; ++i) {
    PickedFrom from;
    Result<TokenId> t = chain.sample(logits, 5, from);
    ASSERT_TRUE(t.is_ok());
    EXPECT_EQ(*t, *same.sample(logits));  // the same draw as without the distribution
    ASSERT_EQ(from.top.size(), 3u);
    EXPECT_EQ(ids(Candidates{from.top}), (std::vector<TokenId>{2, 0, 3}));
    EXPECT_NEAR(from.top[0].p, 0.4f / 0.9f, 1e-5f);
    EXPECT_NEAR(from.top[1].p, 0.3f / 0.9f, 1e-5f);
    EXPECT_NEAR(from.top[2].p, 0.2f / 0.9f, 1e-5f);
    for (const Candidate& c : from.top) {
      if (c.id == *t) {
        EXPECT_EQ(from.p_chosen, c.p);
      }
    }
    PickedFrom two;
    ASSERT_TRUE(chain.sample(logits, 2, two).is_ok());
    EXPECT_EQ(two.top.size(), 2u);  // at most n_top
    (void)same.sample(logits);      // keeps the two chains' draws in step
  }
  // A temperature of 2 flattens what is left: p ~ sqrt of the original ones.
  p.temperature = 2.0f;
  SamplerChain warm = std::move(SamplerChain::create(p, 4)).value();
  PickedFrom from;
  ASSERT_TRUE(warm.sample(logits, 3, from).is_ok());
  const float z = std::sqrt(0.4f) + std::sqrt(0.3f) + std::sqrt(0.2f);
  EXPECT_NEAR(from.top[0].p, std::sqrt(0.4f) / z, 1e-5f);
}

TEST(SamplerChain, PickedFromLeavesOutForbiddenTokensAndGreedyIsCertain) {
  SamplerParams p;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.temperature = 1.0f;
  p.logit_bias = {{1, -kInf}};
  SamplerChain chain = std::move(SamplerChain::create(p, 3)).value();
  PickedFrom from;
  ASSERT_TRUE(chain.sample(std::vector<float>{0.0f, 5.0f, 0.0f}, 3, from).is_ok());
  ASSERT_EQ(from.top.size(), 2u);  // token 1 has probability 0: not listed
  EXPECT_NEAR(from.top[0].p + from.top[1].p, 1.0f, 1e-6f);
  EXPECT_NEAR(from.p_chosen, 0.5f, 1e-6f);

  // Greedy: all the mass on the chosen token, however flat the logits.
  p = SamplerParams{};
  p.temperature = 0.0f;
  SamplerChain greedy = std::move(SamplerChain::create(p, 3)).value();
  Result<TokenId> t = greedy.sample(std::vector<float>{1.0f, 1.1f, 1.05f}, 3, from);
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(*t, 1);
  EXPECT_EQ(from.p_chosen, 1.0f);
  ASSERT_EQ(from.top.size(), 1u);
  EXPECT_EQ(from.top[0].id, 1);
  EXPECT_EQ(from.top[0].p, 1.0f);
  ASSERT_TRUE(greedy.sample(std::vector<float>{1.0f, 1.1f, 1.05f}, 0, from).is_ok());
  EXPECT_TRUE(from.top.empty());
}

}  // namespace
}  // namespace tessera
