// The kernels of the backward ops that are derivatives, in grad mode: rms_norm_back,
// soft_max_back, silu_back and rope's inverse rotation against J^T dy of their forward's
// double reference by finite differences. The linear ones (acc, sum_to, get_rows_back)
// are in backward_linear_ops_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "ops/grad_test_util.h"

namespace tessera::test {
namespace {

// Float row sums and a rounded 1 / sqrt, relative to the summed terms' magnitudes; the
// absolute part covers the cancellation in dy - x r^2 mean(dy x) on short rows.
constexpr Tolerance kRmsNormBackTol{1e-5, 1e-6};
// y enters rounded to float and dot(dy, y) is a float sum: relative to the summed terms.
constexpr Tolerance kSoftMaxBackTol{1e-5, 1e-7};
// Float exp, and the cancellation of 1 + x (1 - s) near silu's minimum (x = -1.28).
constexpr Tolerance kSiluBackTol{1e-5, 1e-6};
// cos/sin rounded to float once, one rotation: as the forward's test.
constexpr Tolerance kRopeBackTol{1e-6, 1e-6};

std::string shape_str(const Shape& ne) {
  std::ostringstream s;
  s << ne[0] << "x" << ne[1] << "x" << ne[2] << "x" << ne[3];
  return s.str();
}

int64_t count(const Shape& ne) { return ne[0] * ne[1] * ne[2] * ne[3]; }

// A forward acting on each run of `seg` consecutive elements of x alone (a row along dim
// 0, or one element): f(the run's values, the run's number).
using SegmentFn = std::function<std::vector<double>(const std::vector<double>&, int64_t)>;

// fd_expected one run at a time: the other runs' outputs do not move, so this is what
// fd_expected over all of x gives, in time linear in the number of runs.
Expected fd_by_segments(const std::vector<double>& x, const std::vector<double>& dy, int64_t seg,
                        const SegmentFn& f) {
  Expected e;
  for (int64_t s = 0; s * seg < int64_t(x.size()); ++s) {
    const std::vector<double> xs(x.begin() + s * seg, x.begin() + (s + 1) * seg);
    const std::vector<double> dys(dy.begin() + s * seg, dy.begin() + (s + 1) * seg);
    const Expected part =
        fd_expected([&](const std::vector<double>& v) { return f(v, s); }, xs, dys);
    e.value.insert(e.value.end(), part.value.begin(), part.value.end());
    e.mag.insert(e.mag.end(), part.mag.begin(), part.mag.end());
  }
  return e;
}

// An F32 input of logical shape ne holding `values` (row-major), laid out as `layout`
// (the same views as OpTest::input builds; padding holds 1e3, which would show).
Tensor* input_laid_out(OpTest& t, const Shape& ne, Layout layout, const std::vector<double>& v) {
  Shape base = ne;
  int64_t pad0 = 0, pad1 = 0;  // Sliced: the view starts at (2, 1)
  if (layout == Layout::Transposed) base = {ne[1], ne[0], ne[2], ne[3]};
  if (layout == Layout::Permuted) base = {ne[0], ne[2], ne[1], ne[3]};
  if (layout == Layout::Sliced) base = {ne[0] + 3, ne[1] + 1, ne[2], ne[3] + 1}, pad0 = 2, pad1 = 1;
  std::vector<float> b(size_t(count(base)), 1e3f);
  size_t k = 0;
  for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    int64_t j[4] = {i0 + pad0, i1 + pad1, i2, i3};
    if (layout == Layout::Transposed) std::swap(j[0], j[1]);
    if (layout == Layout::Permuted) std::swap(j[1], j[2]);
    b[size_t(j[0] + base[0] * (j[1] + base[1] * (j[2] + base[2] * j[3])))] = float(v[k++]);
  });
  Tensor* leaf = t.input_values(DType::F32, base, b);
  Graph& g = t.graph();
  switch (layout) {
    case Layout::Contiguous:
      return leaf;
    case Layout::Transposed:
      return ops::transpose(g, leaf);
    case Layout::Permuted:
      return ops::permute(g, leaf, 0, 2, 1, 3);
    case Layout::Sliced:
      return ops::view(g, leaf, ne, leaf->nb, leaf->nb[1] + 2 * leaf->nb[0]);
  }
  return nullptr;
}

// --- rms_norm_back, soft_max_back, silu_back ------------------------------------------

struct RowCase {
  Shape ne;
  Layout l0 = Layout::Contiguous, l1 = Layout::Contiguous;  // the two inputs' layouts
};

std::ostream& operator<<(std::ostream& os, const RowCase& c) {
  return os << shape_str(c.ne) << " " << layout_name(c.l0) << "/" << layout_name(c.l1);
}

const RowCase kRowCases[] = {
    {{1, 3, 1, 1}},
    {{7, 3, 1, 1}},
    {{33, 4, 2, 1}},
    {{257, 3, 1, 1}},
    {{4097, 2, 1, 1}},
    {{64, 5, 3, 2}},
    {{40, 9, 1, 1}, Layout::Transposed, Layout::Contiguous},
    {{33, 4, 3, 1}, Layout::Permuted, Layout::Sliced},
    {{255, 5, 1, 1}, Layout::Sliced, Layout::Transposed},
    {{17, 6, 2, 1}, Layout::Contiguous, Layout::Permuted},
};

class RowBackTest : public ::testing::TestWithParam<RowCase> {};

TEST_P(RowBackTest, RmsNormBack) {
  const RowCase& c = GetParam();
  constexpr float kEps = 1e-5f;
  OpTest t(41);
  Tensor* x = t.input(DType::F32, c.ne, c.l0, -2, 3);
  Tensor* dy = t.input(DType::F32, c.ne, c.l1, -1, 1);
  Tensor* out = ops::rms_norm_back(t.graph(), x, dy, kEps);
  auto rms_norm = [](const std::vector<double>& row, int64_t) {
    double ss = 0;
    for (double v : row) ss += v * v;
    const double r = 1.0 / std::sqrt(ss / double(row.size()) + double(kEps));
    std::vector<double> y;
    for (double v : row) y.push_back(v * r);
    return y;
  };
  t.check(out, fd_by_segments(values_of(t, x), values_of(t, dy), c.ne[0], rms_norm),
          kRmsNormBackTol);
}

// y = soft_max(x, mask, scale) with a causal -inf mask whose row 0 is entirely -inf.
TEST_P(RowBackTest, SoftMaxBack) {
  const RowCase& c = GetParam();
  const float scale = 0.7f;
  const int64_t n = c.ne[0];
  OpTest t(42);
  Tensor* dy = t.input(DType::F32, c.ne, c.l0, -1, 1);
  std::mt19937 rng(43);
  std::uniform_real_distribution<double> dist(-4, 4);
  std::vector<double> x(size_t(count(c.ne)));
  for (double& v : x) v = double(float(dist(rng)));
  auto soft_max = [&](const std::vector<double>& row, int64_t s) {
    const int64_t i1 = s % c.ne[1];
    std::vector<double> y(row.size());
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      const bool masked = i1 == 0 || j > i1 + n - c.ne[1];
      y[size_t(j)] = masked ? -INFINITY : double(scale) * row[size_t(j)] - 0.01 * double(j % 5);
      mx = std::max(mx, y[size_t(j)]);
    }
    for (double& e : y) sum += (e = mx == -INFINITY ? 0.0 : std::exp(e - mx));
    for (double& e : y) e = sum > 0 ? e / sum : 0.0;
    return y;
  };
  std::vector<double> y;
  for (int64_t s = 0; s * n < int64_t(x.size()); ++s) {
    const std::vector<double> ys = soft_max({x.begin() + s * n, x.begin() + (s + 1) * n}, s);
    y.insert(y.end(), ys.begin(), ys.end());
  }
  Tensor* out = ops::soft_max_back(t.graph(), dy, input_laid_out(t, c.ne, c.l1, y), scale);
  t.check(out, fd_by_segments(x, values_of(t, dy), n, soft_max), kSoftMaxBackTol);
}

TEST_P(RowBackTest, SiluBack) {
  const RowCase& c = GetParam();
  OpTest t(44);
  Tensor* x = t.input(DType::F32, c.ne, c.l0, -8, 8);
  Tensor* dy = t.input(DType::F32, c.ne, c.l1, -1, 1);
  Tensor* out = ops::silu_back(t.graph(), x, dy);
  auto silu = [](const std::vector<double>& v, int64_t) {
    return std::vector<double>{v[0] / (1.0 + std::exp(-v[0]))};
  };
  t.check(out, fd_by_segments(values_of(t, x), values_of(t, dy), 1, silu), kSiluBackTol);
}

INSTANTIATE_TEST_SUITE_P(Shapes, RowBackTest, ::testing::ValuesIn(kRowCases));

// Far from zero: exp(-x) overflows (x = -100) or s rounds to 1; no NaN, no inf.
TEST(SiluBack, Saturates) {
  OpTest t(45);
  const std::vector<float> xs = {-100, -88, -30, -1.2785f, 0, 1e-30f, 30, 100};
  Tensor* x = t.input_values(DType::F32, {8, 1, 1, 1}, xs);
  Tensor* dy = t.input(DType::F32, {8, 1, 1, 1}, -1, 1);
  Tensor* out = ops::silu_back(t.graph(), x, dy);
  auto silu = [](const std::vector<double>& v, int64_t) {
    return std::vector<double>{v[0] / (1.0 + std::exp(-v[0]))};
  };
  t.check(out, fd_by_segments(values_of(t, x), values_of(t, dy), 1, silu), kSiluBackTol);
}

// --- rope's inverse rotation --------------------------------------------------------

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
    {66, 3, 7, 32, RopeMode::NeoX},
    {80, 5, 3, 20, RopeMode::NeoX, 500000.0f, 0.25f},
    {18, 7, 4, 10, RopeMode::Normal, 10000.0f, 0.5f, Layout::Sliced},
    {32, 6, 3, 16, RopeMode::NeoX, 10000.0f, 1.0f, Layout::Permuted},
    {16, 5, 3, 12, RopeMode::Normal, 10000.0f, 1.0f, Layout::Transposed},
    {32, 4, 6, 32, RopeMode::Normal, 500000.0f, 1.0f, Layout::Contiguous, true},
    {64, 3, 5, 32, RopeMode::NeoX, 25000.0f, 1.0f, Layout::Sliced, true},
};

class RopeBackTest : public ::testing::TestWithParam<RopeCase> {
 protected:
  // The positions (0, 40, 77, ...) and the frequency divisors of the case.
  std::vector<int32_t> positions() const {
    std::vector<int32_t> pos;
    for (int64_t i = 0; i < GetParam().n_tokens; ++i)
      pos.push_back(int32_t(i == 0 ? 0 : 3 + 37 * i));
    return pos;
  }
  std::vector<float> factors() const {
    const int64_t half = GetParam().n_dims / 2;
    std::vector<float> f;
    for (int64_t i = 0; i < half; ++i) f.push_back(0.5f * std::pow(16.0f, float(i) / float(half)));
    return f;
  }
  Tensor* rope(OpTest& t, Tensor* a, bool inverse) {
    const RopeCase& c = GetParam();
    Tensor* p = t.ids(positions());
    Tensor* f =
        c.factors ? t.input_values(DType::F32, {c.n_dims / 2, 1, 1, 1}, factors()) : nullptr;
    auto build = inverse ? ops::rope_back : ops::rope;
    return build(t.graph(), a, p, c.n_dims, c.mode, c.freq_base, c.freq_scale, f);
  }
};

TEST_P(RopeBackTest, MatchesFiniteDifferences) {
  const RopeCase& c = GetParam();
  OpTest t(46);
  Tensor* dy = t.input(DType::F32, {c.head_dim, c.n_head, c.n_tokens, 1}, c.layout, -1, 1);
  Tensor* out = rope(t, dy, true);
  const std::vector<int32_t> pos = positions();
  const std::vector<float> fac = factors();
  const int64_t half = c.n_dims / 2;
  auto forward = [&](const std::vector<double>& x, int64_t s) {
    std::vector<double> y = x;
    for (int64_t i = 0; i < half; ++i) {
      const double theta = pos[size_t(s / c.n_head)] * double(c.freq_scale) *
                           std::pow(double(c.freq_base), -2.0 * double(i) / c.n_dims) /
                           (c.factors ? double(fac[size_t(i)]) : 1.0);
      const size_t j0 = size_t(c.mode == RopeMode::NeoX ? i : 2 * i);
      const size_t j1 = size_t(c.mode == RopeMode::NeoX ? i + half : 2 * i + 1);
      y[j0] = x[j0] * std::cos(theta) - x[j1] * std::sin(theta);
      y[j1] = x[j0] * std::sin(theta) + x[j1] * std::cos(theta);
    }
    return y;
  };
  // The rotation is linear: its Jacobian is the same at any x, here x = dy.
  const std::vector<double> dyv = values_of(t, dy);
  t.check(out, fd_by_segments(dyv, dyv, c.head_dim, forward), kRopeBackTol);
}

// The inverse undoes the forward: rope_back(rope(x)) == x.
TEST_P(RopeBackTest, InverseUndoesForward) {
  const RopeCase& c = GetParam();
  OpTest t(47);
  Tensor* x = t.input(DType::F32, {c.head_dim, c.n_head, c.n_tokens, 1}, c.layout, -1, 1);
  Tensor* out = rope(t, rope(t, x, false), true);
  t.check(out, {values_of(t, x), {}}, {2e-6, 2e-6});
}

INSTANTIATE_TEST_SUITE_P(Cases, RopeBackTest, ::testing::ValuesIn(kRopeCases));

}  // namespace
}  // namespace tessera::test
