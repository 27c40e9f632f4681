// rope (normal and NeoX pairings, partial rotation, per-pair frequency divisors as in
// Llama 3's rope_freqs) against a double-precision reference.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_test_util.h"

namespace tessera::test {
namespace {

struct RopeCase {
  int64_t head_dim, n_head, n_tokens;
  int n_dims;
  RopeMode mode;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  Layout layout = Layout::Contiguous;
  bool factors = false;  // divide pair i's angle by a factor in [0.5, 8]
};

std::ostream& operator<<(std::ostream& os, const RopeCase& c) {
  return os << "head_dim " << c.head_dim << " heads " << c.n_head << " tokens " << c.n_tokens
            << " n_dims " << c.n_dims << (c.mode == RopeMode::NeoX ? " neox" : " normal")
            << " base " << c.freq_base << " scale " << c.freq_scale << " " << layout_name(c.layout)
            << (c.factors ? " factors" : "");
}

const RopeCase kRopeCases[] = {
    {2, 1, 1, 2, RopeMode::Normal},
    {64, 4, 5, 64, RopeMode::Normal},
    {64, 4, 5, 64, RopeMode::NeoX},
    {64, 3, 7, 32, RopeMode::Normal},
    {64, 3, 7, 32, RopeMode::NeoX},
    {80, 5, 3, 20, RopeMode::NeoX, 500000.0f, 0.25f},
    {128, 2, 9, 128, RopeMode::Normal, 1000000.0f, 1.0f},
    {18, 7, 4, 10, RopeMode::Normal, 10000.0f, 0.5f, Layout::Sliced},
    {32, 6, 3, 16, RopeMode::NeoX, 10000.0f, 1.0f, Layout::Permuted},
    {16, 5, 3, 16, RopeMode::Normal, 10000.0f, 1.0f, Layout::Transposed},
    {32, 4, 6, 32, RopeMode::Normal, 500000.0f, 1.0f, Layout::Contiguous, true},
    {64, 3, 5, 32, RopeMode::NeoX, 25000.0f, 1.0f, Layout::Sliced, true},
};

class RopeTest : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeTest, MatchesReference) {
  const RopeCase& c = GetParam();
  OpTest t(31);
  Tensor* a = t.input(DType::F32, {c.head_dim, c.n_head, c.n_tokens, 1}, c.layout, -1, 1);
  std::vector<int32_t> pos;
  for (int64_t i = 0; i < c.n_tokens; ++i) pos.push_back(int32_t(i == 0 ? 0 : 3 + 37 * i));
  Tensor* p = t.ids(pos);
  const int64_t half = c.n_dims / 2;
  std::vector<float> factors;
  for (int64_t i = 0; i < half; ++i) factors.push_back(0.5f * std::pow(16.0f, float(i) / float(half)));
  Tensor* f = c.factors ? t.input_values(DType::F32, {half, 1, 1, 1}, factors) : nullptr;
  Tensor* out = ops::rope(t.graph(), a, p, c.n_dims, c.mode, c.freq_base, c.freq_scale, f);

  Expected want;
  std::vector<double> y(size_t(c.head_dim));
  for_each_index({1, c.n_head, c.n_tokens, 1}, [&](int64_t, int64_t h, int64_t tok, int64_t) {
    for (int64_t i = 0; i < c.head_dim; ++i) y[size_t(i)] = t.at(a, i, h, tok);
    for (int64_t i = 0; i < half; ++i) {
      const double theta = pos[size_t(tok)] * double(c.freq_scale) *
                           std::pow(double(c.freq_base), -2.0 * double(i) / c.n_dims) /
                           (c.factors ? double(factors[size_t(i)]) : 1.0);
      const int64_t j0 = c.mode == RopeMode::NeoX ? i : 2 * i;
      const int64_t j1 = c.mode == RopeMode::NeoX ? i + half : 2 * i + 1;
      const double x0 = t.at(a, j0, h, tok), x1 = t.at(a, j1, h, tok);
      y[size_t(j0)] = x0 * std::cos(theta) - x1 * std::sin(theta);
      y[size_t(j1)] = x0 * std::sin(theta) + x1 * std::cos(theta);
    }
    want.value.insert(want.value.end(), y.begin(), y.end());
  });
  t.check(out, want, {0, 1e-6});
}

INSTANTIATE_TEST_SUITE_P(Cases, RopeTest, ::testing::ValuesIn(kRopeCases));

}  // namespace
}  // namespace tessera::test
