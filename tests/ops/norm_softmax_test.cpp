// rms_norm, norm and soft_max against double-precision references.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "ops/op_test_util.h"

namespace tessera::test {
namespace {

struct RowCase {
  Shape ne;
  Layout layout = Layout::Contiguous;
};

std::ostream& operator<<(std::ostream& os, const RowCase& c) {
  return os << c.ne[0] << "x" << c.ne[1] << "x" << c.ne[2] << "x" << c.ne[3] << " "
            << layout_name(c.layout);
}

const RowCase kNormCases[] = {
    {{1, 1, 1, 1}},
    {{3, 2, 1, 1}},
    {{17, 5, 1, 1}},
    {{255, 3, 2, 1}},
    {{4097, 3, 1, 1}},
    {{64, 7, 3, 2}},
    {{40, 9, 1, 1}, Layout::Transposed},
    {{33, 4, 3, 1}, Layout::Permuted},
    {{255, 5, 1, 1}, Layout::Sliced},
};

// Calls f(row values, i1, i2, i3) for each row of t.
template <typename F>
void for_each_row(const OpTest& t, const Tensor* a, F f) {
  std::vector<double> row(size_t(a->ne[0]));
  for_each_index({1, a->ne[1], a->ne[2], a->ne[3]},
                 [&](int64_t, int64_t i1, int64_t i2, int64_t i3) {
                   for (int64_t i0 = 0; i0 < a->ne[0]; ++i0)
                     row[size_t(i0)] = t.at(a, i0, i1, i2, i3);
                   f(row, i1, i2, i3);
                 });
}

class NormTest : public ::testing::TestWithParam<RowCase> {};

TEST_P(NormTest, RmsNorm) {
  OpTest t(21);
  Tensor* a = t.input(DType::F32, GetParam().ne, GetParam().layout, -2, 3);
  Tensor* out = ops::rms_norm(t.graph(), a, 1e-5f);
  Expected want;
  for_each_row(t, a, [&](const std::vector<double>& x, int64_t, int64_t, int64_t) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double s = 1.0 / std::sqrt(ss / double(x.size()) + double(1e-5f));
    for (double v : x) want.value.push_back(v * s);
  });
  t.check(out, want, {1e-5, 1e-6});
}

TEST_P(NormTest, Norm) {
  OpTest t(22);
  Tensor* a = t.input(DType::F32, GetParam().ne, GetParam().layout, -2, 3);
  Tensor* out = ops::norm(t.graph(), a, 1e-5f);
  Expected want;
  for_each_row(t, a, [&](const std::vector<double>& x, int64_t, int64_t, int64_t) {
    double mean = 0, var = 0;
    for (double v : x) mean += v;
    mean /= double(x.size());
    for (double v : x) var += (v - mean) * (v - mean);
    const double s = 1.0 / std::sqrt(var / double(x.size()) + double(1e-5f));
    for (double v : x) want.value.push_back((v - mean) * s);
  });
  t.check(out, want, {1e-5, 1e-6});
}

INSTANTIATE_TEST_SUITE_P(Shapes, NormTest, ::testing::ValuesIn(kNormCases));

struct SoftMaxCase {
  Shape ne;
  Layout layout = Layout::Contiguous;
  int mask = 0;  // 0: none; 1: causal -inf mask with row 0 fully masked; 2: random, strided
  float scale = 1.0f;
};

std::ostream& operator<<(std::ostream& os, const SoftMaxCase& c) {
  return os << c.ne[0] << "x" << c.ne[1] << "x" << c.ne[2] << "x" << c.ne[3] << " "
            << layout_name(c.layout) << " mask " << c.mask << " scale " << c.scale;
}

const SoftMaxCase kSoftMaxCases[] = {
    {{1, 1, 1, 1}},
    {{3, 4, 1, 1}, Layout::Contiguous, 0, 0.5f},
    {{17, 5, 2, 1}, Layout::Contiguous, 1, 0.125f},
    {{255, 7, 1, 1}, Layout::Contiguous, 1, 1.0f},
    {{4097, 3, 1, 1}, Layout::Contiguous, 0, 2.0f},
    {{4097, 3, 2, 1}, Layout::Contiguous, 1, 0.25f},
    {{32, 6, 4, 2}, Layout::Contiguous, 2, 0.3f},
    {{24, 9, 1, 1}, Layout::Transposed, 1, 1.0f},
    {{40, 5, 3, 1}, Layout::Permuted, 2, 1.0f},
    {{65, 4, 2, 1}, Layout::Sliced, 1, 0.7f},
};

// A mask [ne0, ne1 + 2]: entry (j, i) is -inf for j > i + ne0 - ne1 (causal), and row 0
// is entirely -inf; the rest are small offsets.
Tensor* causal_mask(OpTest& t, int64_t ne0, int64_t ne1) {
  std::vector<float> v;
  for (int64_t i = 0; i < ne1 + 2; ++i) {
    for (int64_t j = 0; j < ne0; ++j) {
      const bool masked = i == 0 || j > i + ne0 - ne1;
      v.push_back(masked ? -std::numeric_limits<float>::infinity() : -0.01f * float((i + j) % 7));
    }
  }
  return t.input_values(DType::F32, {ne0, ne1 + 2, 1, 1}, v);
}

class SoftMaxTest : public ::testing::TestWithParam<SoftMaxCase> {};

TEST_P(SoftMaxTest, MatchesReference) {
  const SoftMaxCase& c = GetParam();
  OpTest t(23);
  Tensor* a = t.input(DType::F32, c.ne, c.layout, -4, 4);
  Tensor* mask = nullptr;
  if (c.mask == 1) mask = causal_mask(t, c.ne[0], c.ne[1]);
  if (c.mask == 2)
    mask = t.input(DType::F32, {c.ne[0], c.ne[1] + 1, 1, 1}, Layout::Transposed, -1, 0);
  Tensor* out = ops::soft_max(t.graph(), a, mask, c.scale);
  Expected want;
  for_each_row(t, a, [&](const std::vector<double>& x, int64_t i1, int64_t, int64_t) {
    std::vector<double> v(x.size());
    double mx = -INFINITY;
    for (size_t j = 0; j < x.size(); ++j) {
      v[j] = double(float(x[j] * double(c.scale))) + (mask ? t.at(mask, int64_t(j), i1) : 0.0);
      mx = std::max(mx, v[j]);
    }
    double sum = 0;
    for (double& e : v) sum += (e = mx == -INFINITY ? 0.0 : std::exp(e - mx));
    for (double e : v) want.value.push_back(sum > 0 ? e / sum : 0.0);
  });
  t.check(out, want, {1e-5, 1e-9});
}

INSTANTIATE_TEST_SUITE_P(Shapes, SoftMaxTest, ::testing::ValuesIn(kSoftMaxCases));

}  // namespace
}  // namespace tessera::test
