// The gradient rules of the mixture-of-experts ops (src/train/grad_routing.cpp: sigmoid,
// div, sum_rows, take_along with its take_along_back kernel, mul_mat_id's activations) in
// grad mode: d sum(dy * f(x)) / d x from the backward graph, on every CPU level and 1-3
// threads, against central differences of a double-precision forward; odd sizes, strided
// inputs; and the whole router (softmax or sigmoid, top-k, take_along, normalisation,
// scale), whose gradient flows through the chosen probabilities and not through top_k.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/grad_test_util.h"
#include "train/backward.h"

namespace tessera::test {
namespace {

constexpr Tolerance kTol{2e-5, 1e-6};

// d sum(dy * out) / d x from the backward graph with a random dy, against `want` (a
// function of dy's values).
void check_grad(OpTest& t, Tensor* out, Tensor* x, const std::function<Expected(const std::vector<double>&)>& want,
                Tolerance tol = kTol) {
  Tensor* dy = t.input(DType::F32, out->ne, -1, 1);
  Tensor* params[] = {x};
  Result<train::Gradients> gr = train::build_backward(t.graph(), out, dy, params);
  ASSERT_TRUE(gr.is_ok()) << gr.status().message();
  ASSERT_NE(gr->grads[0], nullptr);
  t.check(gr->grads[0], want(values_of(t, dy)), tol);
}

struct Case {
  Shape ne;
  Layout layout;
};

const Case kCases[] = {
    {{1, 3, 1, 1}, Layout::Contiguous}, {{7, 3, 1, 1}, Layout::Contiguous}, {{33, 4, 2, 1}, Layout::Contiguous},
    {{17, 5, 1, 1}, Layout::Sliced},    {{9, 4, 3, 1}, Layout::Permuted},
};

class RoutingGrad : public ::testing::TestWithParam<Case> {};

TEST_P(RoutingGrad, Sigmoid) {
  const Case& c = GetParam();
  OpTest t(21);
  Tensor* x = t.input(DType::F32, c.ne, c.layout, -6, 6);
  check_grad(t, ops::sigmoid(t.graph(), x), x, [&](const std::vector<double>& dy) {
    return fd_by_segments(values_of(t, x), dy, 1, [](const std::vector<double>& r, int64_t) {
      return std::vector<double>{1.0 / (1.0 + std::exp(-r[0]))};
    });
  });
}

// Each row's sum: the gradient spreads each row's dy over the row.
TEST_P(RoutingGrad, SumRows) {
  const Case& c = GetParam();
  OpTest t(22);
  Tensor* x = t.input(DType::F32, c.ne, c.layout, -2, 2);
  const int64_t n0 = c.ne[0];
  check_grad(t, ops::sum_rows(t.graph(), x), x, [&](const std::vector<double>& dy) {
    return fd_expected([&](const std::vector<double>& v) {
      std::vector<double> y(v.size() / size_t(n0), 0.0);
      for (size_t i = 0; i < v.size(); ++i) y[i / size_t(n0)] += v[i];
      return y;
    }, values_of(t, x), dy);
  });
}

// a / b with b one value per row (the routing's normalisation) or of a's shape: the
// gradient of each operand, the other held.
TEST_P(RoutingGrad, Div) {
  const Case& c = GetParam();
  for (bool per_row : {true, false}) {
    for (int wrt = 0; wrt < 2; ++wrt) {
      SCOPED_TRACE(std::string(per_row ? "per row" : "elementwise") + (wrt ? ", d b" : ", d a"));
      OpTest t(23);
      Tensor* a = t.input(DType::F32, c.ne, c.layout, -2, 2);
      const Shape nb = per_row ? Shape{1, c.ne[1], c.ne[2], c.ne[3]} : c.ne;
      Tensor* b = t.input(DType::F32, nb, 0.5f, 2.0f);
      const std::vector<double> va = values_of(t, a);
      const std::vector<double> vb = values_of(t, b);
      const size_t n0 = size_t(c.ne[0]);
      auto f = [&](const std::vector<double>& xa, const std::vector<double>& xb) {
        std::vector<double> y(xa.size());
        for (size_t i = 0; i < y.size(); ++i) y[i] = xa[i] / xb[per_row ? i / n0 : i];
        return y;
      };
      check_grad(t, ops::div(t.graph(), a, b), wrt ? b : a, [&](const std::vector<double>& dy) {
        if (wrt == 0) return fd_expected([&](const std::vector<double>& v) { return f(v, vb); }, va, dy);
        return fd_expected([&](const std::vector<double>& v) { return f(va, v); }, vb, dy);
      });
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, RoutingGrad, ::testing::ValuesIn(kCases));

// Ids into rows of n elements, k per row over `rows` rows; repeated ids within a row when
// `repeat` (the gradient then adds both).
std::vector<int32_t> pattern_ids(int64_t n, int64_t k, int64_t rows, bool repeat) {
  std::vector<int32_t> v;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < k; ++i) v.push_back(int32_t(repeat && i == 1 ? v.back() : (r * 5 + i * 3) % n));
  }
  return v;
}

TEST(RoutingGradOps, TakeAlongScattersBackToTheIds) {
  for (const auto& [n, k, rows, repeat] : {std::tuple{7, 2, 5, false}, std::tuple{11, 3, 4, true},
                                           std::tuple{1, 1, 3, false}, std::tuple{64, 8, 9, false}}) {
    SCOPED_TRACE(std::to_string(n) + " x " + std::to_string(k));
    OpTest t(24);
    Tensor* a = t.input(DType::F32, {n, rows, 1, 1}, -1, 1);
    const std::vector<int32_t> ids = pattern_ids(n, k, rows, repeat);
    Tensor* id = ops::reshape(t.graph(), t.ids(ids), {k, rows, 1, 1});
    check_grad(t, ops::take_along(t.graph(), a, id), a, [&](const std::vector<double>& dy) {
      return fd_expected([&](const std::vector<double>& v) {
        std::vector<double> y;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t i = 0; i < k; ++i) y.push_back(v[size_t(r * n + ids[size_t(r * k + i)])]);
        }
        return y;
      }, values_of(t, a), dy);
    });
  }
}

struct IdGradCase {
  DType type;
  int64_t k, m, n_expert, n_used, n_tokens;
  bool broadcast;  // one activation row per token (the gate and up projections)
  Layout lb;
};

class MulMatIdGrad : public ::testing::TestWithParam<IdGradCase> {};

// d b of mul_mat_id with frozen experts (F32, or F16 dequantized by the rule).
TEST_P(MulMatIdGrad, ActivationsMatchDifferences) {
  const IdGradCase c = GetParam();
  OpTest t(25);
  Tensor* as = t.input(c.type, {c.k, c.m, c.n_expert, 1});
  const int64_t nb1 = c.broadcast ? 1 : c.n_used;
  Tensor* b = t.input(DType::F32, {c.k, nb1, c.n_tokens, 1}, c.lb);
  const std::vector<int32_t> ids = pattern_ids(c.n_expert, c.n_used, c.n_tokens, false);
  Tensor* id = ops::reshape(t.graph(), t.ids(ids), {c.n_used, c.n_tokens, 1, 1});
  check_grad(t, ops::mul_mat_id(t.graph(), as, b, id), b, [&](const std::vector<double>& dy) {
    return fd_expected([&](const std::vector<double>& v) {
      std::vector<double> y;
      for (int64_t tok = 0; tok < c.n_tokens; ++tok) {
        for (int64_t i = 0; i < c.n_used; ++i) {
          const int64_t e = ids[size_t(tok * c.n_used + i)];
          for (int64_t o = 0; o < c.m; ++o) {
            double s = 0;
            for (int64_t q = 0; q < c.k; ++q) s += t.at(as, q, o, e) * v[size_t((tok * nb1 + i % nb1) * c.k + q)];
            y.push_back(s);
          }
        }
      }
      return y;
    }, values_of(t, b), dy);
  });
}

const IdGradCase kIdCases[] = {
    {DType::F32, 7, 5, 4, 2, 3, true, Layout::Contiguous},  {DType::F32, 9, 6, 5, 2, 4, false, Layout::Contiguous},
    {DType::F16, 33, 3, 3, 1, 2, true, Layout::Contiguous}, {DType::F16, 5, 17, 6, 3, 3, false, Layout::Sliced},
    {DType::F32, 4, 3, 8, 8, 2, false, Layout::Permuted},
};
INSTANTIATE_TEST_SUITE_P(Cases, MulMatIdGrad, ::testing::ValuesIn(kIdCases));

// The router as moe_block builds it, from the logits: probabilities (softmax or
// sigmoid), the top k ids, their probabilities, normalised to sum 1 when asked, scaled.
// The reference picks the ids from the unperturbed logits (the choice is piecewise
// constant: random logits keep their order under the differences' steps).
TEST(RoutingGradOps, TheRouterDifferentiatesThroughTheChosenProbabilities) {
  for (bool softmax : {true, false}) {
    for (bool norm : {true, false}) {
      SCOPED_TRACE(std::string(softmax ? "softmax" : "sigmoid") + (norm ? ", normalised" : ""));
      const int64_t n = 7, k = 3, tokens = 5;
      const float scale = 1.5f;
      OpTest t(26);
      Graph& g = t.graph();
      Tensor* logits = t.input(DType::F32, {n, tokens, 1, 1}, -3, 3);
      Tensor* probs = softmax ? ops::soft_max(g, logits, nullptr, 1.0f) : ops::sigmoid(g, logits);
      Tensor* w = ops::take_along(g, probs, ops::top_k(g, probs, int(k)));
      if (norm) w = ops::div(g, w, ops::sum_rows(g, w));
      w = ops::scale(g, w, scale);
      const std::vector<double> x0 = values_of(t, logits);
      auto f = [&](const std::vector<double>& v) {
        std::vector<double> y;
        for (int64_t r = 0; r < tokens; ++r) {
          std::vector<double> p(static_cast<size_t>(n)), p0(static_cast<size_t>(n));
          double mx = -1e300, z = 0;
          for (int64_t i = 0; i < n; ++i) mx = std::max(mx, v[size_t(r * n + i)]);
          for (int64_t i = 0; i < n; ++i) z += std::exp(v[size_t(r * n + i)] - mx);
          for (int64_t i = 0; i < n; ++i) {
            const double l = v[size_t(r * n + i)];
            p[size_t(i)] = softmax ? std::exp(l - mx) / z : 1.0 / (1.0 + std::exp(-l));
            p0[size_t(i)] = x0[size_t(r * n + i)];  // the logits' order is the probabilities'
          }
          std::vector<int64_t> order(static_cast<size_t>(n));
          std::iota(order.begin(), order.end(), 0);
          std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p0[size_t(a)] > p0[size_t(b)]; });
          double s = 0;
          for (int64_t i = 0; i < k; ++i) s += p[size_t(order[size_t(i)])];
          for (int64_t i = 0; i < k; ++i) y.push_back(scale * p[size_t(order[size_t(i)])] / (norm ? s : 1.0));
        }
        return y;
      };
      check_grad(t, w, logits, [&](const std::vector<double>& dy) { return fd_expected(f, x0, dy); });
    }
  }
}

}  // namespace
}  // namespace tessera::test
