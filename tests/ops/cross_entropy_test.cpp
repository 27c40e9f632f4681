// cross_entropy against a double-precision mean of logsumexp(row) - row[target], and
// cross_entropy_back against finite differences of that reference times d loss: rows
// with skipped (negative) targets, every row skipped, vocabularies of 1, 3 and 1001
// entries (odd, past any vector width), logits of +-80 (exp without the max subtracted
// would overflow), and logits with padded rows; a target past the vocabulary is a CHECK.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <tuple>
#include <vector>

#include "ops/grad_test_util.h"

namespace tessera::test {
namespace {

struct CeCase {
  int64_t n_vocab;
  std::vector<int32_t> targets;  // one per row; < 0 skips the row
  float range = 4.0f;            // logits uniform in [-range, range]
  Layout layout = Layout::Contiguous;
};

std::ostream& operator<<(std::ostream& os, const CeCase& c) {
  os << "vocab " << c.n_vocab << " targets";
  for (int32_t t : c.targets) os << " " << t;
  return os << " range " << c.range << " " << layout_name(c.layout);
}

const CeCase kCases[] = {
    {1, {0, 0, -1}},  // one entry: every loss is 0
    {3, {2, -1, 0, 1, 1}},
    {1001, {17, 1000, -1, 0, 500, 999, -1}, 4.0f, Layout::Sliced},
    {1001, {3, 700, 1000, 42}, 80.0f},  // large logits
    {7, {-1, -1, -1}},                  // no row counts: 0, gradient 0
    {33, {5}, 80.0f, Layout::Sliced},
};

// The mean loss of the rows with a target, in double; x is [n_vocab, n] row-major.
double loss_ref(const CeCase& c, const std::vector<double>& x) {
  double sum = 0;
  int64_t count = 0;
  for (size_t r = 0; r < c.targets.size(); ++r) {
    if (c.targets[r] < 0) continue;
    const double* row = &x[r * size_t(c.n_vocab)];
    double max = row[0];
    for (int64_t i = 1; i < c.n_vocab; ++i) max = std::max(max, row[i]);
    double s = 0;
    for (int64_t i = 0; i < c.n_vocab; ++i) s += std::exp(row[i] - max);
    sum += max + std::log(s) - row[c.targets[r]];
    ++count;
  }
  return count > 0 ? sum / double(count) : 0.0;
}

Tensor* logits_of(OpTest& t, const CeCase& c) {
  return t.input(DType::F32, {c.n_vocab, int64_t(c.targets.size()), 1, 1}, c.layout, -c.range,
                 c.range);
}

// The kernel sums the exps in float (a few ulp of the sum) and forms max + log(sum) -
// row[target] in double: the loss is off by a few 1e-8 of the terms' size (max and
// row[target], up to 80 here; 6e-8 measured), so the magnitude given is the mean of
// |max| + |row[target]| + 1 and the relative tolerance 1e-6 of it.
constexpr Tolerance kLossTol{1e-6, 0};

class CrossEntropyTest : public ::testing::TestWithParam<CeCase> {};

TEST_P(CrossEntropyTest, LossMatchesReference) {
  const CeCase& c = GetParam();
  OpTest t(29);
  Tensor* logits = logits_of(t, c);
  Tensor* out = ops::cross_entropy(t.graph(), logits, t.ids(c.targets));
  const std::vector<double> x = values_of(t, logits);
  double mag = 0;
  int64_t count = 0;
  for (size_t r = 0; r < c.targets.size(); ++r) {
    if (c.targets[r] < 0) continue;
    const double* row = &x[r * size_t(c.n_vocab)];
    mag += std::fabs(*std::max_element(row, row + c.n_vocab)) + std::fabs(row[c.targets[r]]) + 1;
    ++count;
  }
  Expected want{{loss_ref(c, x)}, {count > 0 ? mag / double(count) : 0.0}};
  t.check(out, want, kLossTol);
}

// Each element is (p - onehot) * g with g = d loss / count, from a float softmax: a few
// ulp of p g, and at the target a few ulp of g itself (p g - g cancels when p is near 1),
// so the magnitude given is g (p + onehot) and the relative tolerance a few ulps of it
// (3e-7 measured). The differences themselves are good to about 1e-16 |loss| / (2 step)
// (step 1e-6 max(1, |x|)): up to 4e-10 here, which kBackAbs covers.
constexpr double kBackRel = 2e-6;
constexpr double kBackAbs = 1e-9;

class CrossEntropyBackTest : public ::testing::TestWithParam<std::tuple<CeCase, float>> {};

TEST_P(CrossEntropyBackTest, MatchesFiniteDifferences) {
  const CeCase& c = std::get<0>(GetParam());
  const float dloss = std::get<1>(GetParam());
  OpTest t(31);
  Tensor* logits = logits_of(t, c);
  Tensor* dl = t.input_values(DType::F32, {1, 1, 1, 1}, {dloss});
  Tensor* out = ops::cross_entropy_back(t.graph(), logits, t.ids(c.targets), dl);
  const std::vector<double> x = values_of(t, logits);
  ForwardFn f = [&](const std::vector<double>& xs) { return std::vector<double>{loss_ref(c, xs)}; };
  Expected want = fd_expected(f, x, {double(dloss)});
  int64_t count = 0;
  for (int32_t tg : c.targets) count += tg >= 0;
  const double g = count > 0 ? double(dloss) / double(count) : 0.0;
  for (size_t r = 0; r < c.targets.size(); ++r) {
    const double* row = &x[r * size_t(c.n_vocab)];
    const double max = *std::max_element(row, row + c.n_vocab);
    double s = 0;
    for (int64_t i = 0; i < c.n_vocab; ++i) s += std::exp(row[i] - max);
    for (int64_t i = 0; i < c.n_vocab; ++i) {
      const double p = c.targets[r] < 0 ? 0.0 : std::exp(row[i] - max) / s;
      want.mag[r * size_t(c.n_vocab) + size_t(i)] = g * (p + (i == c.targets[r] ? 1.0 : 0.0));
    }
  }
  t.check(out, want, {kBackRel, kBackAbs});
}

INSTANTIATE_TEST_SUITE_P(Cases, CrossEntropyTest, ::testing::ValuesIn(kCases));
INSTANTIATE_TEST_SUITE_P(Cases, CrossEntropyBackTest,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::Values(1.0f, 0.37f)));

// A target past the vocabulary is the caller's bug: a CHECK, not a silent skip.
TEST(CrossEntropyDeathTest, TargetOutOfRange) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        OpTest t(37);
        Tensor* logits = t.input(DType::F32, {5, 2, 1, 1});
        t.run(ops::cross_entropy(t.graph(), logits, t.ids({1, 5})), 1);
      },
      "a target is not below the vocabulary size");
  EXPECT_DEATH(
      {
        OpTest t(37);
        Tensor* logits = t.input(DType::F32, {5, 2, 1, 1});
        Tensor* dl = t.input_values(DType::F32, {1, 1, 1, 1}, {1.0f});
        t.run(ops::cross_entropy_back(t.graph(), logits, t.ids({7, 0}), dl), 1);
      },
      "a target is not below the vocabulary size");
}

}  // namespace
}  // namespace tessera::test
