// The mixture-of-experts ops against double-precision references, on every level and
// 1-3 threads (op_test_util.h): mul_mat_id with float weights (odd sizes, repeated and
// unused experts, one or two ids per token, broadcast and per-id activations, strided
// activations), and the routing ops top_k, take_along, sum_rows, div, sigmoid.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/op_test_util.h"

namespace tessera::test {
namespace {

Tensor* ids_2d(OpTest& t, const std::vector<int32_t>& v, int64_t n_used, int64_t n_tokens) {
  return ops::reshape(t.graph(), t.ids(v), {n_used, n_tokens, 1, 1});
}

struct IdCase {
  DType type;
  int64_t k, m, n_expert, n_used, n_tokens;
  bool broadcast;  // one activation row per token
  Layout lb;
};

class MulMatIdTest : public ::testing::TestWithParam<IdCase> {};

TEST_P(MulMatIdTest, MatchesReference) {
  const IdCase c = GetParam();
  OpTest t(7);
  Tensor* as = t.input(c.type, {c.k, c.m, c.n_expert, 1});
  const int64_t nb1 = c.broadcast ? 1 : c.n_used;
  Tensor* b = t.input(DType::F32, {c.k, nb1, c.n_tokens, 1}, c.lb);
  std::vector<int32_t> v;
  for (int64_t tok = 0; tok < c.n_tokens; ++tok) {
    for (int64_t i = 0; i < c.n_used; ++i) v.push_back(int32_t((tok * 3 + i * 2) % (c.n_expert - 1)));  // last expert unused
  }
  Tensor* out = ops::mul_mat_id(t.graph(), as, b, ids_2d(t, v, c.n_used, c.n_tokens));
  Expected want;
  for (int64_t tok = 0; tok < c.n_tokens; ++tok) {
    for (int64_t i = 0; i < c.n_used; ++i) {
      const int64_t e = v[size_t(tok * c.n_used + i)];
      for (int64_t o = 0; o < c.m; ++o) {
        double s = 0, mag = 0;
        for (int64_t q = 0; q < c.k; ++q) {
          const double p = t.at(as, q, o, e) * t.at(b, q, i % nb1, tok);
          s += p;
          mag += std::fabs(p);
        }
        want.value.push_back(s);
        want.mag.push_back(mag);
      }
    }
  }
  t.check(out, want, {2e-6, 1e-30});
}

constexpr Layout kC = Layout::Contiguous;
const IdCase kIdCases[] = {
    {DType::F32, 33, 7, 4, 2, 5, true, kC},   {DType::F32, 64, 17, 5, 2, 9, false, kC},
    {DType::F16, 40, 5, 3, 1, 4, true, kC},   {DType::F16, 96, 19, 6, 2, 3, false, kC},
    {DType::F32, 31, 3, 4, 2, 6, false, Layout::Sliced},
    {DType::F32, 16, 9, 8, 2, 1, true, kC},   // decode: one token
};
INSTANTIATE_TEST_SUITE_P(Cases, MulMatIdTest, ::testing::ValuesIn(kIdCases));

// take_along of a second tensor whose values are the ids names which ids top_k chose.
TEST(RoutingOps, TopKTakesTheLargestFirstAndTheLowerIdOnTies) {
  OpTest t(3);
  const std::vector<float> x = {0.1f, 0.7f, 0.2f, 0.7f, -1.0f,  //
                                3.0f, 1.0f, 2.0f, 0.0f, 5.0f};
  Tensor* a = t.input_values(DType::F32, {5, 2, 1, 1}, x);
  Tensor* id_values = t.input_values(DType::F32, {5, 2, 1, 1}, {0, 1, 2, 3, 4, 0, 1, 2, 3, 4});
  Tensor* w = ops::take_along(t.graph(), id_values, ops::top_k(t.graph(), a, 3));
  t.check(w, {{1, 3, 2, 4, 0, 2}, {}}, {0, 0});
}

TEST(RoutingOps, TakeAlongGathersEachRowsIds) {
  OpTest t(4);
  Tensor* a = t.input(DType::F32, {6, 3, 1, 1});
  const std::vector<int32_t> v = {5, 0, 2, 2, 1, 4};
  Tensor* w = ops::take_along(t.graph(), a, ids_2d(t, v, 2, 3));
  Expected want;
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t i = 0; i < 2; ++i) want.value.push_back(t.at(a, v[size_t(r * 2 + i)], r));
  }
  t.check(w, want, {0, 0});
}

double row_sum(OpTest& t, Tensor* a, int64_t r) {
  double s = 0;
  for (int64_t i = 0; i < a->ne[0]; ++i) s += t.at(a, i, r % a->ne[1], r / a->ne[1]);
  return s;
}

TEST(RoutingOps, SumRowsMatchesDoubles) {
  OpTest t(5);
  Tensor* a = t.input(DType::F32, {7, 3, 2, 1}, Layout::Transposed, 0.1f, 2.0f);
  Expected want;
  for (int64_t r = 0; r < 6; ++r) want.value.push_back(row_sum(t, a, r));
  t.check(ops::sum_rows(t.graph(), a), want, {1e-6, 0});
}

TEST(RoutingOps, DivBroadcastsTheDivisor) {
  OpTest t(6);
  Tensor* a = t.input(DType::F32, {7, 3, 2, 1}, 0.1f, 2.0f);
  Tensor* d = t.input(DType::F32, {1, 3, 2, 1}, 0.5f, 2.0f);
  Expected want;
  for (int64_t r = 0; r < 6; ++r) {
    for (int64_t i = 0; i < 7; ++i) want.value.push_back(t.at(a, i, r % 3, r / 3) / t.at(d, 0, r % 3, r / 3));
  }
  t.check(ops::div(t.graph(), a, d), want, {1e-6, 0});
}

TEST(RoutingOps, SigmoidMatchesDoubles) {
  OpTest t(7);
  Tensor* x = t.input(DType::F32, {9, 5, 1, 1}, -8.0f, 8.0f);
  Expected want;
  for (int64_t r = 0; r < 5; ++r) {
    for (int64_t i = 0; i < 9; ++i) want.value.push_back(1.0 / (1.0 + std::exp(-t.at(x, i, r))));
  }
  t.check(ops::sigmoid(t.graph(), x), want, {1e-6, 0});
}

}  // namespace
}  // namespace tessera::test
