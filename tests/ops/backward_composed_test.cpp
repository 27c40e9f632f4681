// The gradient rules composed of forward ops (src/train/grad_composed.cpp: norm, gelu,
// relu_sqr)
// in grad mode: d sum(dy * f(x)) / d x from the backward graph, on the CPU backend,
// against central differences of a double-precision forward reference; inputs of odd
// sizes, contiguous and as strided views (as a fused projection's rows are).
#include <gtest/gtest.h>

#include <cmath>

#include "ops/grad_test_util.h"
#include "train/backward.h"

namespace tessera::test {
namespace {

// norm: float row sums and the centering's cancellation, relative to the summed terms;
// gelu: float exp and the softmax that gives the sigmoid (relu_sqr: float products).
constexpr Tolerance kNormTol{2e-5, 2e-6};
constexpr Tolerance kGeluTol{2e-5, 2e-6};

// d sum(dy * out) / d x from the backward graph with a random dy, against `ref` applied
// to each run of `seg` elements of x.
void check_grad(OpTest& t, Tensor* out, Tensor* x, int64_t seg, const SegmentFn& ref, Tolerance tol) {
  Tensor* dy = t.input(DType::F32, out->ne, -1, 1);
  Tensor* params[] = {x};
  Result<train::Gradients> gr = train::build_backward(t.graph(), out, dy, params);
  ASSERT_TRUE(gr.is_ok()) << gr.status().message();
  ASSERT_NE(gr->grads[0], nullptr);
  t.check(gr->grads[0], fd_by_segments(values_of(t, x), values_of(t, dy), seg, ref), tol);
}

struct Case {
  Shape ne;
  Layout layout;
};

const Case kCases[] = {
    {{1, 3, 1, 1}, Layout::Contiguous},  {{2, 5, 1, 1}, Layout::Contiguous},
    {{7, 3, 1, 1}, Layout::Contiguous},  {{33, 4, 2, 1}, Layout::Contiguous},
    {{129, 3, 1, 1}, Layout::Contiguous}, {{17, 5, 1, 1}, Layout::Sliced},
    {{9, 4, 3, 1}, Layout::Permuted},
};

class ComposedGrad : public ::testing::TestWithParam<Case> {};

// LayerNorm without its weight: (x - mean) / sqrt(var + eps) along each row.
TEST_P(ComposedGrad, Norm) {
  const Case& c = GetParam();
  for (float eps : {1e-5f, 1e-2f}) {
    SCOPED_TRACE(eps);
    OpTest t(11);
    Tensor* x = t.input(DType::F32, c.ne, c.layout, -2, 3);
    check_grad(t, ops::norm(t.graph(), x, eps), x, c.ne[0],
               [&](const std::vector<double>& r, int64_t) {
                 double mean = 0, var = 0;
                 for (double v : r) mean += v / double(r.size());
                 for (double v : r) var += (v - mean) * (v - mean) / double(r.size());
                 std::vector<double> y;
                 for (double v : r) y.push_back((v - mean) / std::sqrt(var + double(eps)));
                 return y;
               },
               kNormTol);
  }
}

// The tanh approximation: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), over inputs
// that reach both tails.
TEST_P(ComposedGrad, Gelu) {
  const Case& c = GetParam();
  OpTest t(12);
  Tensor* x = t.input(DType::F32, c.ne, c.layout, -5, 5);
  check_grad(t, ops::gelu(t.graph(), x), x, 1,
             [](const std::vector<double>& r, int64_t) {
               const double v = r[0];
               const double u = std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v);
               return std::vector<double>{0.5 * v * (1.0 + std::tanh(u))};
             },
             kGeluTol);
}

// max(x, 0)^2, over inputs of both signs.
TEST_P(ComposedGrad, ReluSqr) {
  const Case& c = GetParam();
  OpTest t(13);
  Tensor* x = t.input(DType::F32, c.ne, c.layout, -3, 3);
  check_grad(t, ops::relu_sqr(t.graph(), x), x, 1,
             [](const std::vector<double>& r, int64_t) {
               const double v = r[0] > 0 ? r[0] : 0.0;
               return std::vector<double>{v * v};
             },
             kGeluTol);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ComposedGrad, ::testing::ValuesIn(kCases));

}  // namespace
}  // namespace tessera::test
