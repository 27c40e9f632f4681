// AdamW and its schedule against a plain double-precision transcription of the paper's
// algorithm (Loshchilov & Hutter, Algorithm 2, with bias-corrected moments).
#include <gtest/gtest.h>

#include <cmath>

#include "train/adamw.h"

namespace tessera::train {
namespace {

TEST(Schedule, WarmupThenCosineToTheFloor) {
  AdamWConfig c;
  c.lr = 1e-3f;
  c.min_lr_ratio = 0.1f;
  c.warmup = 10;
  c.total_steps = 110;
  EXPECT_FLOAT_EQ(learning_rate(c, 0), 1e-4f);
  EXPECT_FLOAT_EQ(learning_rate(c, 9), 1e-3f);
  EXPECT_FLOAT_EQ(learning_rate(c, 10), 1e-3f);
  EXPECT_NEAR(learning_rate(c, 60), 0.55e-3, 1e-9);  // half way down the cosine
  EXPECT_NEAR(learning_rate(c, 110), 1e-4, 1e-9);
  EXPECT_NEAR(learning_rate(c, 500), 1e-4, 1e-9);  // stays at the floor
}

TEST(AdamW, MatchesTheAlgorithmInDouble) {
  AdamWConfig c;
  c.lr = 0.01f;
  c.warmup = 0;
  c.total_steps = 1000000;  // a flat learning rate for the comparison
  c.min_lr_ratio = 1.0f;
  c.weight_decay = 0.1f;
  c.grad_clip = 0;
  std::vector<std::vector<float>> p = {{0.5f, -1.0f, 2.0f}, {0.25f}};
  std::vector<double> pd = {0.5, -1.0, 2.0, 0.25}, m(4, 0.0), v(4, 0.0);
  const std::vector<bool> decays = {true, false};
  std::vector<AdamWState> state(2);
  for (int step = 0; step < 5; ++step) {
    const std::vector<std::vector<float>> g = {{0.1f * float(step + 1), -0.2f, 0.05f}, {1.0f / float(step + 1)}};
    adamw_step(c, step, p, g, decays, state);
    const double gd[4] = {g[0][0], g[0][1], g[0][2], g[1][0]};
    for (int i = 0; i < 4; ++i) {
      m[size_t(i)] = 0.9 * m[size_t(i)] + 0.1 * gd[i];
      v[size_t(i)] = 0.95 * v[size_t(i)] + 0.05 * gd[i] * gd[i];
      const double mh = m[size_t(i)] / (1 - std::pow(0.9, step + 1));
      const double vh = v[size_t(i)] / (1 - std::pow(0.95, step + 1));
      const double wd = i < 3 ? 0.1 : 0.0;
      pd[size_t(i)] -= 0.01 * (mh / (std::sqrt(vh) + 1e-8) + wd * pd[size_t(i)]);
    }
  }
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(p[0][size_t(i)], pd[size_t(i)], 1e-6) << i;
  EXPECT_NEAR(p[1][0], pd[3], 1e-6);
}

TEST(AdamW, ClipsTheGlobalNorm) {
  AdamWConfig c;
  c.warmup = 0;
  c.grad_clip = 1.0f;
  c.weight_decay = 0;
  std::vector<std::vector<float>> p = {{0.0f, 0.0f}}, q = p;
  std::vector<AdamWState> s1(1), s2(1);
  // Norm 5, clipped to 1: the same update as the gradient divided by 5 (Adam's first
  // step is sign-like, so compare the moments instead).
  EXPECT_DOUBLE_EQ(adamw_step(c, 0, p, {{3.0f, 4.0f}}, {false}, s1), 5.0);
  adamw_step(c, 0, q, {{0.6f, 0.8f}}, {false}, s2);
  EXPECT_FLOAT_EQ(s1[0].m[0], s2[0].m[0]);
  EXPECT_FLOAT_EQ(s1[0].v[1], s2[0].v[1]);
}

}  // namespace
}  // namespace tessera::train
