// rope (normal and NeoX pairings, partial rotation, per-pair frequency divisors as in
// Llama 3's rope_freqs, YaRN's ramp and the attention factor as ggml's rope_ext computes
// them) against a double-precision reference, and its inverse (the gradient, rope_back) in
// grad mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "ops/grad_test_util.h"

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
  RopeYarn yarn = {};
};

std::ostream& operator<<(std::ostream& os, const RopeCase& c) {
  return os << "head_dim " << c.head_dim << " heads " << c.n_head << " tokens " << c.n_tokens
            << " n_dims " << c.n_dims << (c.mode == RopeMode::NeoX ? " neox" : " normal")
            << " base " << c.freq_base << " scale " << c.freq_scale << " " << layout_name(c.layout)
            << (c.factors ? " factors" : "") << " ext " << c.yarn.ext_factor << " attn "
            << c.yarn.attn_factor << " orig " << c.yarn.n_ctx_orig;
}

const RopeCase kRopeCases[] = {
    {2, 1, 1, 2, RopeMode::Normal},
    {64, 4, 5, 64, RopeMode::Normal},
    {64, 4, 5, 64, RopeMode::NeoX},
    {64, 3, 7, 32, RopeMode::Normal},
    {64, 3, 7, 32, RopeMode::NeoX},
    {66, 3, 7, 32, RopeMode::NeoX},
    {80, 5, 3, 20, RopeMode::NeoX, 500000.0f, 0.25f},
    {128, 2, 9, 128, RopeMode::Normal, 1000000.0f, 1.0f},
    {18, 7, 4, 10, RopeMode::Normal, 10000.0f, 0.5f, Layout::Sliced},
    {32, 6, 3, 16, RopeMode::NeoX, 10000.0f, 1.0f, Layout::Permuted},
    {16, 5, 3, 16, RopeMode::Normal, 10000.0f, 1.0f, Layout::Transposed},
    {16, 5, 3, 12, RopeMode::Normal, 10000.0f, 1.0f, Layout::Transposed},
    {32, 4, 6, 32, RopeMode::Normal, 500000.0f, 1.0f, Layout::Contiguous, true},
    {64, 3, 5, 32, RopeMode::NeoX, 25000.0f, 1.0f, Layout::Sliced, true},
    // DeepSeek-V2's YaRN: factor 40, 256 original positions, the rope's attention factor
    // 1 / (1 + 0.1 ln 40); the ramp spans pairs 0..4 of 8.
    {16, 4, 6, 16, RopeMode::Normal, 10000.0f, 0.025f, Layout::Contiguous, false, {1.0f, 0.730520f, 32.0f, 1.0f, 256}},
    {48, 3, 5, 32, RopeMode::NeoX, 10000.0f, 0.125f, Layout::Permuted, false, {1.0f, 1.0f, 32.0f, 1.0f, 512}},
    // A partial YaRN mix over divided frequencies, odd sizes, a strided view.
    {38, 5, 3, 30, RopeMode::Normal, 500000.0f, 0.25f, Layout::Sliced, true, {0.5f, 1.3f, 16.0f, 2.0f, 4096}},
    // Phi-3 LongRoPE: divisors and an attention factor, no YaRN mix.
    {32, 4, 6, 32, RopeMode::NeoX, 10000.0f, 1.0f, Layout::Sliced, true, {0.0f, 1.1547005f}},
    {20, 3, 4, 20, RopeMode::Normal, 10000.0f, 0.5f, Layout::Transposed, false, {0.0f, 0.8f}},
};

// The case's positions (0, 40, 77, ...) and frequency divisors (0.5 .. 8).
std::vector<int32_t> positions(const RopeCase& c) {
  std::vector<int32_t> pos;
  for (int64_t i = 0; i < c.n_tokens; ++i) pos.push_back(int32_t(i == 0 ? 0 : 3 + 37 * i));
  return pos;
}

std::vector<float> factors(const RopeCase& c) {
  const int64_t half = c.n_dims / 2;
  std::vector<float> f;
  for (int64_t i = 0; i < half; ++i) f.push_back(0.5f * std::pow(16.0f, float(i) / float(half)));
  return f;
}

// ggml's YaRN correction dims (ggml_rope_yarn_corr_dims), in double.
std::pair<double, double> corr_dims(const RopeCase& c) {
  auto dim = [&](double beta) {
    return c.n_dims * std::log(c.yarn.n_ctx_orig / (beta * 2 * std::numbers::pi)) / (2 * std::log(double(c.freq_base)));
  };
  return {std::max(0.0, std::floor(dim(c.yarn.beta_fast))), std::min(c.n_dims - 1.0, std::ceil(dim(c.yarn.beta_slow)))};
}

// The magnitude cos and sin are multiplied by (ggml's rope_yarn mscale).
double magnitude(const RopeCase& c) {
  const double a = c.yarn.attn_factor;
  return c.yarn.ext_factor != 0 ? a * (1 + 0.1 * std::log(1 / double(c.freq_scale))) : a;
}

// The rotation of one head's row x (head_dim values) of token `tok`, in double.
std::vector<double> rotate_ref(const RopeCase& c, const std::vector<double>& x, int64_t tok) {
  const std::vector<int32_t> pos = positions(c);
  const std::vector<float> fac = factors(c);
  const int64_t half = c.n_dims / 2;
  const double m = magnitude(c);
  std::vector<double> y = x;
  for (int64_t i = 0; i < half; ++i) {
    const double extrap = pos[size_t(tok)] * std::pow(double(c.freq_base), -2.0 * double(i) / c.n_dims) /
                          (c.factors ? double(fac[size_t(i)]) : 1.0);
    double theta = double(c.freq_scale) * extrap;
    if (c.yarn.ext_factor != 0) {
      const auto [low, high] = corr_dims(c);
      const double ramp = 1 - std::clamp((double(i) - low) / std::max(0.001, high - low), 0.0, 1.0);
      const double mix = ramp * c.yarn.ext_factor;
      theta = theta * (1 - mix) + extrap * mix;
    }
    const size_t j0 = size_t(c.mode == RopeMode::NeoX ? i : 2 * i);
    const size_t j1 = size_t(c.mode == RopeMode::NeoX ? i + half : 2 * i + 1);
    y[j0] = m * (x[j0] * std::cos(theta) - x[j1] * std::sin(theta));
    y[j1] = m * (x[j0] * std::sin(theta) + x[j1] * std::cos(theta));
  }
  return y;
}

// rope (or its inverse, rope_back) of a with the case's positions and divisors.
Tensor* rope_of(OpTest& t, const RopeCase& c, Tensor* a, bool inverse) {
  Tensor* p = t.ids(positions(c));
  Tensor* f = c.factors ? t.input_values(DType::F32, {c.n_dims / 2, 1, 1, 1}, factors(c)) : nullptr;
  auto build = inverse ? ops::rope_back : ops::rope;
  return build(t.graph(), a, p, c.n_dims, c.mode, c.freq_base, c.freq_scale, f, c.yarn);
}

class RopeTest : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeTest, MatchesReference) {
  const RopeCase& c = GetParam();
  OpTest t(31);
  Tensor* a = t.input(DType::F32, {c.head_dim, c.n_head, c.n_tokens, 1}, c.layout, -1, 1);
  Tensor* out = rope_of(t, c, a, false);
  Expected want;
  std::vector<double> x(size_t(c.head_dim));
  for_each_index({1, c.n_head, c.n_tokens, 1}, [&](int64_t, int64_t h, int64_t tok, int64_t) {
    for (int64_t i = 0; i < c.head_dim; ++i) x[size_t(i)] = t.at(a, i, h, tok);
    const std::vector<double> y = rotate_ref(c, x, tok);
    want.value.insert(want.value.end(), y.begin(), y.end());
  });
  t.check(out, want, {0, 1e-6});
}

// Grad mode: rope_back(dy) is J^T dy of the forward rotation. The rotation is linear, so
// its Jacobian is the same at any x; the differences are taken at x = dy. cos/sin are
// rounded to float once, one rotation: the forward's tolerance.
TEST_P(RopeTest, InverseMatchesFiniteDifferences) {
  const RopeCase& c = GetParam();
  OpTest t(46);
  Tensor* dy = t.input(DType::F32, {c.head_dim, c.n_head, c.n_tokens, 1}, c.layout, -1, 1);
  Tensor* out = rope_of(t, c, dy, true);
  const std::vector<double> dyv = values_of(t, dy);
  auto forward = [&](const std::vector<double>& x, int64_t s) { return rotate_ref(c, x, s / c.n_head); };
  t.check(out, fd_by_segments(dyv, dyv, c.head_dim, forward), {1e-6, 1e-6});
}

// The inverse undoes the forward's rotation: rope_back(rope(x)) == magnitude^2 x (the
// rotated pairs; the rest pass through).
TEST_P(RopeTest, InverseUndoesForward) {
  const RopeCase& c = GetParam();
  OpTest t(47);
  Tensor* x = t.input(DType::F32, {c.head_dim, c.n_head, c.n_tokens, 1}, c.layout, -1, 1);
  Tensor* out = rope_of(t, c, rope_of(t, c, x, false), true);
  std::vector<double> want = values_of(t, x);
  const double m2 = magnitude(c) * magnitude(c);
  for (size_t i = 0; i < want.size(); ++i) {
    if (int64_t(i % size_t(c.head_dim)) < c.n_dims) want[i] *= m2;
  }
  t.check(out, {want, {}}, {2e-6, 2e-6});
}

INSTANTIATE_TEST_SUITE_P(Cases, RopeTest, ::testing::ValuesIn(kRopeCases));

}  // namespace
}  // namespace tessera::test
