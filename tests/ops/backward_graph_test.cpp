// The gradient rules of the backward graph (src/train/grad_*.cpp) in grad mode: for each
// forward op, d sum(dy * f(x)) / d x from the backward graph, run on the CPU backend,
// against central differences of a double-precision forward reference. The ops whose
// gradient is a kernel of its own (rms_norm, silu, soft_max, rope, attention,
// cross_entropy) are checked the same way in backward_ops_test.cpp, attention_back_test.cpp
// and cross_entropy_test.cpp; here they appear in compositions.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/grad_test_util.h"
#include "train/backward.h"

namespace tessera::test {
namespace {

// The float forward rounds to ~1e-7; the differences are exact to ~1e-9. Sums of up to
// a few hundred products, so a relative error of the summed magnitudes of 1e-5.
constexpr Tolerance kTol{1e-5, 1e-6};

// Index of element (i0, i1, i2, i3) in row-major order of shape ne.
int64_t flat(const Shape& ne, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return ((i3 * ne[2] + i2) * ne[1] + i1) * ne[0] + i0;
}

// Builds the gradient of `out` with respect to leaf x with a random dy and checks it.
void check_grad(OpTest& t, Tensor* out, Tensor* x, const ForwardFn& ref, Tolerance tol = kTol) {
  Tensor* dy = t.input(DType::F32, out->ne, -1, 1);
  Tensor* params[] = {x};
  Result<train::Gradients> gr = train::build_backward(t.graph(), out, dy, params);
  ASSERT_TRUE(gr.is_ok()) << gr.status().message();
  ASSERT_NE(gr->grads[0], nullptr);
  t.check(gr->grads[0], fd_expected(ref, values_of(t, x), values_of(t, dy)), tol);
}

// a + b with b broadcast over a, as a function of a or of b.
std::vector<double> add_ref(const Shape& na, const std::vector<double>& a, const Shape& nb,
                            const std::vector<double>& b, bool mul) {
  std::vector<double> y(a.size());
  for_each_index(na, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const double bv = b[size_t(flat(nb, i0 % nb[0], i1 % nb[1], i2 % nb[2], i3 % nb[3]))];
    const double av = a[size_t(flat(na, i0, i1, i2, i3))];
    y[size_t(flat(na, i0, i1, i2, i3))] = mul ? av * bv : av + bv;
  });
  return y;
}

struct BroadcastCase {
  Shape a, b;
};

class BroadcastGrad : public ::testing::TestWithParam<BroadcastCase> {};

TEST_P(BroadcastGrad, AddAndMulBothOperands) {
  for (bool mul : {false, true}) {
    for (int wrt : {0, 1}) {
      SCOPED_TRACE(std::string(mul ? "mul" : "add") + (wrt ? " d b" : " d a"));
      const BroadcastCase& c = GetParam();
      OpTest t(3);
      Tensor* a = t.input(DType::F32, c.a, -2, 2);
      Tensor* b = t.input(DType::F32, c.b, -2, 2);
      Tensor* out = mul ? ops::mul(t.graph(), a, b) : ops::add(t.graph(), a, b);
      const std::vector<double> av = values_of(t, a), bv = values_of(t, b);
      check_grad(t, out, wrt ? b : a, [&](const std::vector<double>& x) {
        return wrt ? add_ref(c.a, av, c.b, x, mul) : add_ref(c.a, x, c.b, bv, mul);
      });
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, BroadcastGrad,
                         ::testing::Values(BroadcastCase{{7, 3, 1, 1}, {7, 3, 1, 1}},
                                           BroadcastCase{{17, 5, 2, 1}, {17, 1, 1, 1}},
                                           BroadcastCase{{6, 4, 3, 2}, {3, 1, 3, 1}},
                                           BroadcastCase{{33, 9, 1, 1}, {1, 9, 1, 1}}));

TEST(BackwardGraph, Scale) {
  OpTest t(4);
  Tensor* a = t.input(DType::F32, {13, 3, 1, 1});
  check_grad(t, ops::scale(t.graph(), a, -0.37f), a, [](const std::vector<double>& x) {
    std::vector<double> y(x);
    for (double& v : y) v *= double(-0.37f);
    return y;
  });
}

// result[m, n, p] = sum_k a[k, m, p] b[k, n, p].
std::vector<double> mul_mat_ref(const Shape& na, const std::vector<double>& a, const Shape& nb,
                                const std::vector<double>& b) {
  const int64_t k = na[0], m = na[1], n = nb[1], planes = nb[2];
  std::vector<double> y(size_t(m * n * planes), 0.0);
  for (int64_t p = 0; p < planes; ++p) {
    const int64_t pa = p % na[2];
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < m; ++i) {
        double s = 0;
        for (int64_t e = 0; e < k; ++e) s += a[size_t(flat(na, e, i, pa, 0))] * b[size_t(flat(nb, e, j, p, 0))];
        y[size_t((p * n + j) * m + i)] = s;
      }
    }
  }
  return y;
}

struct MulMatCase {
  Shape a, b;
};

class MulMatGrad : public ::testing::TestWithParam<MulMatCase> {};

TEST_P(MulMatGrad, BothOperands) {
  const MulMatCase& c = GetParam();
  for (int wrt : {0, 1}) {
    if (wrt == 0 && c.a[2] != c.b[2]) continue;  // a broadcast a has no weight gradient
    SCOPED_TRACE(wrt ? "d b" : "d a");
    OpTest t(5);
    Tensor* a = t.input(DType::F32, c.a);
    Tensor* b = t.input(DType::F32, c.b);
    const std::vector<double> av = values_of(t, a), bv = values_of(t, b);
    check_grad(t, ops::mul_mat(t.graph(), a, b), wrt ? b : a, [&](const std::vector<double>& x) {
      return wrt ? mul_mat_ref(c.a, av, c.b, x) : mul_mat_ref(c.a, x, c.b, bv);
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MulMatGrad,
                         ::testing::Values(MulMatCase{{1, 1, 1, 1}, {1, 1, 1, 1}},
                                           MulMatCase{{33, 7, 1, 1}, {33, 5, 1, 1}},
                                           MulMatCase{{16, 4, 2, 1}, {16, 3, 2, 1}},
                                           MulMatCase{{9, 6, 1, 1}, {9, 4, 3, 1}}));

// A frozen F16 weight (as a LoRA base would be): the gradient reaches the activations.
TEST(BackwardGraph, MulMatThroughAFrozenF16Weight) {
  OpTest t(6);
  Tensor* w = t.input(DType::F16, {24, 10, 1, 1});
  Tensor* x = t.input(DType::F32, {24, 3, 1, 1});
  const std::vector<double> wv = values_of(t, w);
  check_grad(t, ops::mul_mat(t.graph(), w, x), x, [&](const std::vector<double>& v) {
    return mul_mat_ref(w->ne, wv, x->ne, v);
  });
}

TEST(BackwardGraph, PermuteTransposeReshape) {
  const Shape ne{5, 3, 4, 2};
  for (int kind = 0; kind < 3; ++kind) {
    SCOPED_TRACE(kind);
    OpTest t(7);
    Graph& g = t.graph();
    Tensor* a = t.input(DType::F32, ne);
    Tensor* out = kind == 0   ? ops::cont(g, ops::permute(g, a, 2, 0, 3, 1))
                  : kind == 1 ? ops::cont(g, ops::transpose(g, a))
                              : ops::reshape(g, a, {15, 8, 1, 1});
    // The result's element order, as a function of a's: read through the same layout.
    std::vector<int64_t> order;
    Tensor* view = kind == 0 ? out->src[0] : kind == 1 ? out->src[0] : out;
    for_each_index(view->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
      const size_t byte = size_t(i0) * view->nb[0] + size_t(i1) * view->nb[1] + size_t(i2) * view->nb[2] +
                          size_t(i3) * view->nb[3];
      order.push_back(int64_t(byte / sizeof(float)));
    });
    check_grad(t, out, a, [&](const std::vector<double>& x) {
      std::vector<double> y;
      for (int64_t i : order) y.push_back(x[size_t(i)]);
      return y;
    });
  }
}

// Windows of a tensor (a slice of rows at an offset; strided windows as attention takes
// its groups' keys), alone and several over one tensor, summed.
TEST(BackwardGraph, ViewWindowsAccumulate) {
  OpTest t(8);
  Graph& g = t.graph();
  Tensor* a = t.input(DType::F32, {6, 8, 3, 1});
  const Strides nb = a->nb;
  Tensor* w1 = ops::view(g, a, {6, 3, 3, 1}, nb, 2 * nb[1]);                            // rows 2-4
  Tensor* w2 = ops::view(g, a, {3, 8, 2, 1}, {nb[0], nb[1], nb[2], nb[3]}, nb[0] + nb[2]);  // cols 1-3, planes 1-2
  Tensor* w3 = ops::view(g, a, {4, 3, 1, 1}, {nb[1], nb[0], nb[2], nb[3]}, nb[0]);     // transposed window
  Tensor* out = ops::concat(g, ops::reshape(g, ops::cont(g, w1), {54, 1, 1, 1}),
                            ops::concat(g, ops::reshape(g, ops::cont(g, w2), {48, 1, 1, 1}),
                                        ops::reshape(g, ops::cont(g, w3), {12, 1, 1, 1}), 0),
                            0);
  std::vector<int64_t> order;
  for (const Tensor* w : {w1, w2, w3}) {
    for_each_index(w->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
      const size_t byte = w->view_offset + size_t(i0) * w->nb[0] + size_t(i1) * w->nb[1] +
                          size_t(i2) * w->nb[2] + size_t(i3) * w->nb[3];
      order.push_back(int64_t(byte / sizeof(float)));
    });
  }
  check_grad(t, out, a, [&](const std::vector<double>& x) {
    std::vector<double> y;
    for (int64_t i : order) y.push_back(x[size_t(i)]);
    return y;
  });
}

// A view of a strided view, as attention takes the token rows of a fused projection's v
// rows: the inner view is also used alone, so both gradients reach the dense owner.
TEST(BackwardGraph, ViewOfAStridedView) {
  OpTest t(13);
  Graph& g = t.graph();
  Tensor* a = t.input(DType::F32, {12, 5, 1, 1});
  const size_t e = a->nb[0], row = a->nb[1];
  Tensor* heads = ops::view(g, a, {3, 2, 5, 1}, {e, 3 * e, row, 5 * row}, 4 * e);  // rows 4-9 as 2 heads
  Tensor* rows = ops::view(g, heads, {6, 5, 1, 1}, {e, row, 5 * row, 5 * row}, 0);  // each token's heads as one row
  ASSERT_FALSE(heads->is_contiguous());
  Tensor* out = ops::concat(g, ops::reshape(g, ops::cont(g, rows), {30, 1, 1, 1}),
                            ops::reshape(g, ops::scale(g, ops::cont(g, heads), 2.0f), {30, 1, 1, 1}), 0);
  std::vector<std::pair<int64_t, double>> order;  // (element of a, factor)
  for (const Tensor* w : {rows, heads}) {
    for_each_index(w->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
      const size_t byte = w->view_offset + size_t(i0) * w->nb[0] + size_t(i1) * w->nb[1] +
                          size_t(i2) * w->nb[2] + size_t(i3) * w->nb[3];
      order.emplace_back(int64_t(byte / sizeof(float)), w == heads ? double(2.0f) : 1.0);
    });
  }
  check_grad(t, out, a, [&](const std::vector<double>& x) {
    std::vector<double> y;
    for (const auto& [i, f] : order) y.push_back(f * x[size_t(i)]);
    return y;
  });
}

TEST(BackwardGraph, ConcatAlongEachDim) {
  for (int dim = 0; dim < 3; ++dim) {
    SCOPED_TRACE(dim);
    OpTest t(9);
    Shape na{4, 3, 2, 1}, nb2 = na;
    nb2[size_t(dim)] = 5;
    Tensor* a = t.input(DType::F32, na);
    Tensor* b = t.input(DType::F32, nb2);
    Tensor* out = ops::concat(t.graph(), a, b, dim);
    const std::vector<double> bv = values_of(t, b);
    const Shape no = out->ne;
    check_grad(t, out, a, [&](const std::vector<double>& x) {
      std::vector<double> y(size_t(out->nelements()));
      for_each_index(no, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        int64_t i[4] = {i0, i1, i2, i3};
        const bool in_a = i[dim] < na[size_t(dim)];
        if (!in_a) i[dim] -= na[size_t(dim)];
        y[size_t(flat(no, i0, i1, i2, i3))] =
            in_a ? x[size_t(flat(na, i[0], i[1], i[2], i[3]))] : bv[size_t(flat(nb2, i[0], i[1], i[2], i[3]))];
      });
      return y;
    });
  }
}

TEST(BackwardGraph, GetRowsWithRepeatedIds) {
  OpTest t(10);
  Tensor* a = t.input(DType::F32, {7, 5, 1, 1});
  const std::vector<int32_t> ids_v = {3, 0, 3, 4, 3, 1};
  Tensor* ids = t.ids(ids_v);
  check_grad(t, ops::get_rows(t.graph(), a, ids), a, [&](const std::vector<double>& x) {
    std::vector<double> y;
    for (int32_t r : ids_v) {
      for (int64_t i = 0; i < 7; ++i) y.push_back(x[size_t(r * 7 + i)]);
    }
    return y;
  });
}

// rms_norm(x) * w, as every LLaMA layer starts: a tensor used twice (x), a broadcast
// weight, and a kernel-backed gradient in one chain.
TEST(BackwardGraph, RmsNormBlockBothInputs) {
  for (int wrt : {0, 1}) {
    SCOPED_TRACE(wrt ? "d w" : "d x");
    OpTest t(11);
    Graph& g = t.graph();
    Tensor* x = t.input(DType::F32, {19, 4, 1, 1}, -2, 2);
    Tensor* w = t.input(DType::F32, {19, 1, 1, 1}, 0.5, 1.5);
    Tensor* out = ops::add(g, ops::mul(g, ops::rms_norm(g, x, 1e-5f), w), x);
    const std::vector<double> xv = values_of(t, x), wv = values_of(t, w);
    check_grad(t, out, wrt ? w : x, [&](const std::vector<double>& v) {
      const std::vector<double>& xs = wrt ? xv : v;
      const std::vector<double>& ws = wrt ? v : wv;
      std::vector<double> y(xs.size());
      for (int64_t r = 0; r < 4; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < 19; ++i) ss += xs[size_t(r * 19 + i)] * xs[size_t(r * 19 + i)];
        const double inv = 1.0 / std::sqrt(ss / 19 + double(1e-5f));
        for (int64_t i = 0; i < 19; ++i) {
          y[size_t(r * 19 + i)] = xs[size_t(r * 19 + i)] * inv * ws[size_t(i)] + xs[size_t(r * 19 + i)];
        }
      }
      return y;
    });
  }
}

TEST(BackwardGraph, RefusesOpsWithoutAGradient) {
  OpTest t(12);
  Tensor* a = t.input(DType::F32, {8, 2, 1, 1});
  Tensor* out = ops::scale(t.graph(), ops::clamp(t.graph(), a, -0.5f, 0.5f), 2.0f);
  Tensor* dy = t.input(DType::F32, out->ne);
  Tensor* params[] = {a};
  const Tensor* missing = train::first_without_gradient(t.graph(), out, params);
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->op, Op::Clamp);
  Result<train::Gradients> gr = train::build_backward(t.graph(), out, dy, params);
  ASSERT_FALSE(gr.is_ok());
  EXPECT_NE(gr.status().message().find("no gradient for clamp"), std::string::npos) << gr.status().message();
}

TEST(BackwardGraph, EveryOpOnThePathHasARule) {
  OpTest t(14);
  Tensor* a = t.input(DType::F32, {8, 2, 1, 1});
  Tensor* frozen = t.input(DType::F32, {8, 2, 1, 1});
  // The clamp is off the path from a: only the frozen input goes through it.
  Tensor* out = ops::add(t.graph(), ops::gelu(t.graph(), ops::norm(t.graph(), a, 1e-5f)),
                         ops::clamp(t.graph(), frozen, -0.5f, 0.5f));
  Tensor* params[] = {a};
  EXPECT_EQ(train::first_without_gradient(t.graph(), out, params), nullptr);
}

TEST(BackwardGraph, ParametersOffThePathGetNoGradient) {
  OpTest t(13);
  Tensor* a = t.input(DType::F32, {8, 2, 1, 1});
  Tensor* unused = t.input(DType::F32, {8, 2, 1, 1});
  Tensor* out = ops::scale(t.graph(), a, 2.0f);
  Tensor* dy = t.input(DType::F32, out->ne);
  Tensor* params[] = {a, unused};
  Result<train::Gradients> gr = train::build_backward(t.graph(), out, dy, params);
  ASSERT_TRUE(gr.is_ok()) << gr.status().message();
  EXPECT_NE(gr->grads[0], nullptr);
  EXPECT_EQ(gr->grads[1], nullptr);
}

}  // namespace
}  // namespace tessera::test
