// The kernels of the backward ops that are derivatives, in grad mode: rms_norm_back,
// soft_max_back and silu_back against J^T dy of their forward's double reference by
// finite differences (rope's inverse rotation: rope_test.cpp). The linear ones (acc, sum_to, get_rows_back)
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

std::string shape_str(const Shape& ne) {
  std::ostringstream s;
  s << ne[0] << "x" << ne[1] << "x" << ne[2] << "x" << ne[3];
  return s.str();
}

int64_t count(const Shape& ne) { return ne[0] * ne[1] * ne[2] * ne[3]; }

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

}  // namespace
}  // namespace tessera::test
