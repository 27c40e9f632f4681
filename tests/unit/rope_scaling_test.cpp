// How a context's RoPE scaling combines with the model file's (apply_rope_scaling): the
// reference context's rules, one by one, on hand-made hyper-parameters, and the refusals.
#include "model/rope_scaling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tessera {
namespace {

/// A file's rope as read: linear scaling by 1/4, original context 128, attn factor 1.
HParams file_rope(RopeScaling type = RopeScaling::Linear, float factor = 4.0f) {
  HParams h;
  h.arch = "llama";
  h.n_ctx_train = 128;
  h.n_ctx_orig = 128;
  h.rope_freq_base = 10000.0f;
  h.rope_scaling = type;
  h.rope_freq_scale_train = 1.0f / factor;
  h.rope_freq_scale = type == RopeScaling::None ? 1.0f : h.rope_freq_scale_train;
  return h;
}

HParams applied(const HParams& file, const RopeScalingParams& p) {
  Result<HParams> h = apply_rope_scaling(file, p);
  EXPECT_TRUE(h.is_ok()) << h.status().message();
  return h ? *h : file;
}

TEST(RopeScaling, DefaultsKeepTheFilesRope) {
  const HParams file = file_rope(RopeScaling::Yarn);
  const HParams h = applied(file, {});
  EXPECT_EQ(h.rope_freq_scale, 0.25f);
  EXPECT_EQ(h.rope_freq_base, 10000.0f);
  const RopeYarn y = h.rope_yarn();
  EXPECT_EQ(y, file.rope_yarn());
  EXPECT_EQ(y.ext_factor, 1.0f);  // YaRN's default mix
  EXPECT_EQ(y.n_ctx_orig, 128);
  EXPECT_EQ(y.beta_fast, 32.0f);
  EXPECT_EQ(y.beta_slow, 1.0f);
  EXPECT_FALSE(RopeScalingParams{}.overrides());
}

TEST(RopeScaling, NoneNeverScalesWhateverTheScaleSays) {
  RopeScalingParams p;
  p.type = RopeScalingType::None;
  p.freq_scale = 0.5f;
  p.freq_base = 40000.0f;
  const HParams h = applied(file_rope(), p);
  EXPECT_EQ(h.rope_freq_scale, 1.0f);
  EXPECT_EQ(h.rope_freq_base, 40000.0f);
  EXPECT_EQ(h.rope_yarn().ext_factor, 0.0f);
}

// A file of type none keeps its factor for a context that asks for scaling.
TEST(RopeScaling, AnotherTypeTakesTheFilesFactor) {
  const HParams file = file_rope(RopeScaling::None, 8.0f);
  EXPECT_EQ(applied(file, {}).rope_freq_scale, 1.0f);
  RopeScalingParams p;
  p.type = RopeScalingType::Linear;
  EXPECT_EQ(applied(file, p).rope_freq_scale, 0.125f);
  p.freq_scale = 0.5f;  // the context's own scale wins
  EXPECT_EQ(applied(file, p).rope_freq_scale, 0.5f);
}

TEST(RopeScaling, ExtFactorFollowsTheTypeUnlessGiven) {
  RopeScalingParams p;
  p.type = RopeScalingType::Yarn;
  EXPECT_EQ(applied(file_rope(), p).rope_yarn().ext_factor, 1.0f);
  p.type = RopeScalingType::Linear;
  EXPECT_EQ(applied(file_rope(RopeScaling::Yarn), p).rope_yarn().ext_factor, 0.0f);
  p.yarn_ext_factor = 0.5f;  // given: whatever the type
  EXPECT_EQ(applied(file_rope(), p).rope_yarn().ext_factor, 0.5f);
  p.yarn_ext_factor = 0.0f;
  p.type = RopeScalingType::Yarn;
  EXPECT_EQ(applied(file_rope(), p).rope_yarn().ext_factor, 0.0f);
}

TEST(RopeScaling, AttnFactorMultipliesTheFilesAndYarnAddsItsMscale) {
  HParams file = file_rope(RopeScaling::Yarn);
  file.rope_attn_factor = 0.5f;
  RopeScalingParams p;
  p.yarn_attn_factor = 3.0f;
  const HParams h = applied(file, p);
  const RopeYarn y = h.rope_yarn();
  EXPECT_EQ(y.attn_factor, 1.5f);
  // YaRN's magnitude: the factor times 1 + 0.1 ln(1 / freq_scale).
  EXPECT_FLOAT_EQ(y.magnitude(h.rope_freq_scale), 1.5f * (1.0f + 0.1f * std::log(4.0f)));
  p.yarn_ext_factor = 0.0f;  // no mix: the factor alone
  EXPECT_FLOAT_EQ(applied(file, p).rope_yarn().magnitude(0.25f), 1.5f);
}

TEST(RopeScaling, OrigCtxMovesTheRampButNotLongRopesChoice) {
  RopeScalingParams p;
  p.type = RopeScalingType::Yarn;
  p.yarn_orig_ctx = 64;
  p.yarn_beta_fast = 16.0f;
  p.yarn_beta_slow = 2.0f;
  const HParams h = applied(file_rope(), p);
  const RopeYarn y = h.rope_yarn();
  EXPECT_EQ(y.n_ctx_orig, 64);
  EXPECT_EQ(y.beta_fast, 16.0f);
  EXPECT_EQ(y.beta_slow, 2.0f);
  EXPECT_EQ(h.n_ctx_orig, 128);  // what LongRoPE's long/short factors are chosen by
}

TEST(RopeScaling, BadValuesAreRefusedByName) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    RopeScalingParams p;
    const char* field;
  };
  std::vector<Case> cases;
  auto add = [&](auto set, const char* field) {
    RopeScalingParams p;
    set(p);
    cases.push_back({p, field});
  };
  add([&](RopeScalingParams& p) { p.freq_base = -1.0f; }, "freq_base");
  add([&](RopeScalingParams& p) { p.freq_base = nan; }, "freq_base");
  add([&](RopeScalingParams& p) { p.freq_scale = inf; }, "freq_scale");
  add([&](RopeScalingParams& p) { p.yarn_orig_ctx = -5; }, "yarn_orig_ctx");
  add([&](RopeScalingParams& p) { p.yarn_orig_ctx = int64_t(1) << 40; }, "yarn_orig_ctx");
  add([&](RopeScalingParams& p) { p.yarn_ext_factor = nan; }, "yarn_ext_factor");
  add([&](RopeScalingParams& p) { p.yarn_attn_factor = 0.0f; }, "yarn_attn_factor");
  add([&](RopeScalingParams& p) { p.yarn_beta_fast = -32.0f; }, "yarn_beta_fast");
  add([&](RopeScalingParams& p) { p.yarn_beta_slow = 0.0f; }, "yarn_beta_slow");
  for (const Case& c : cases) {
    Result<HParams> h = apply_rope_scaling(file_rope(), c.p);
    ASSERT_FALSE(h.is_ok()) << c.field;
    EXPECT_NE(h.status().message().find(c.field), std::string::npos) << h.status().message();
  }
}

TEST(RopeScaling, AModelWithoutRotaryPositionsRefusesASetting) {
  HParams alibi = file_rope();
  alibi.arch = "bloom";
  alibi.positions = PositionKind::Alibi;
  EXPECT_TRUE(apply_rope_scaling(alibi, {}).is_ok());  // nothing asked: nothing to refuse
  RopeScalingParams p;
  p.freq_base = 20000.0f;
  Result<HParams> h = apply_rope_scaling(alibi, p);
  ASSERT_FALSE(h.is_ok());
  EXPECT_NE(h.status().message().find("bloom"), std::string::npos) << h.status().message();
  EXPECT_NE(h.status().message().find("ALiBi"), std::string::npos) << h.status().message();
}

TEST(RopeScaling, NamesOfTheTypes) {
  EXPECT_EQ(rope_scaling_from_name("none"), RopeScalingType::None);
  EXPECT_EQ(rope_scaling_from_name("linear"), RopeScalingType::Linear);
  EXPECT_EQ(rope_scaling_from_name("yarn"), RopeScalingType::Yarn);
  EXPECT_FALSE(rope_scaling_from_name("longrope").has_value());  // the file's only
  EXPECT_FALSE(rope_scaling_from_name("YaRN").has_value());
}

}  // namespace
}  // namespace tessera
