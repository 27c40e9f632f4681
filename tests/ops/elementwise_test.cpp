// add, mul (broadcasting), scale, silu, gelu, relu_sqr, clamp, softcap against double-precision
// references.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "ops/op_test_util.h"

namespace tessera::test {
namespace {

struct BinaryCase {
  Shape a, b;
  Layout la = Layout::Contiguous, lb = Layout::Contiguous;
};

std::string shape_str(const Shape& ne) {
  std::ostringstream s;
  s << ne[0] << "x" << ne[1] << "x" << ne[2] << "x" << ne[3];
  return s.str();
}

std::ostream& operator<<(std::ostream& os, const BinaryCase& c) {
  return os << "a " << shape_str(c.a) << " " << layout_name(c.la) << ", b " << shape_str(c.b) << " "
            << layout_name(c.lb);
}

const BinaryCase kBinaryCases[] = {
    {{1, 1, 1, 1}, {1, 1, 1, 1}},
    {{3, 5, 1, 1}, {3, 5, 1, 1}},
    {{17, 3, 2, 1}, {17, 1, 1, 1}},
    {{255, 7, 1, 1}, {255, 7, 1, 1}},
    {{4097, 3, 1, 1}, {4097, 1, 1, 1}},
    {{4097, 5, 1, 1}, {4097, 5, 1, 1}},
    {{64, 6, 2, 2}, {1, 6, 1, 2}},
    {{30, 4, 3, 1}, {10, 4, 1, 1}},
    {{33, 9, 2, 1}, {33, 9, 2, 1}, Layout::Transposed, Layout::Contiguous},
    {{33, 9, 2, 1}, {33, 9, 1, 1}, Layout::Contiguous, Layout::Transposed},
    {{19, 5, 4, 1}, {19, 5, 4, 1}, Layout::Permuted, Layout::Sliced},
    {{19, 5, 3, 2}, {19, 5, 1, 1}, Layout::Sliced, Layout::Permuted},
};

class BinaryTest : public ::testing::TestWithParam<BinaryCase> {
 protected:
  // Runs a op b and checks it against f(a, b) in double.
  template <typename F>
  void run(Tensor* (*build)(Graph&, Tensor*, Tensor*), F f) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(in_place ? "in place" : "own output");
      run_once(build, f, in_place);
    }
  }
  template <typename F>
  void run_once(Tensor* (*build)(Graph&, Tensor*, Tensor*), F f, bool in_place) {
    const BinaryCase& c = GetParam();
    OpTest t(11);
    t.set_in_place(in_place);
    Tensor* a = t.input(DType::F32, c.a, c.la, -2, 2);
    Tensor* b = t.input(DType::F32, c.b, c.lb, -2, 2);
    Tensor* out = build(t.graph(), a, b);
    Expected want;
    for_each_index(c.a, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
      want.value.push_back(
          f(t.at(a, i0, i1, i2, i3), t.at(b, i0 % c.b[0], i1 % c.b[1], i2 % c.b[2], i3 % c.b[3])));
    });
    t.check(out, want, {1e-6, 0});
  }
};

TEST_P(BinaryTest, Add) {
  run(ops::add, [](double x, double y) { return x + y; });
}
TEST_P(BinaryTest, Mul) {
  run(ops::mul, [](double x, double y) { return x * y; });
}

INSTANTIATE_TEST_SUITE_P(Shapes, BinaryTest, ::testing::ValuesIn(kBinaryCases));

struct UnaryCase {
  Shape ne;
  Layout layout = Layout::Contiguous;
};

std::ostream& operator<<(std::ostream& os, const UnaryCase& c) {
  return os << shape_str(c.ne) << " " << layout_name(c.layout);
}

const UnaryCase kUnaryCases[] = {
    {{1, 1, 1, 1}},
    {{3, 1, 1, 1}},
    {{17, 3, 1, 1}},
    {{255, 5, 1, 1}},
    {{4097, 3, 1, 1}},
    {{16, 7, 3, 2}},
    {{21, 6, 1, 1}, Layout::Transposed},
    {{18, 4, 3, 1}, Layout::Permuted},
    {{255, 3, 2, 1}, Layout::Sliced},
};

class UnaryTest : public ::testing::TestWithParam<UnaryCase> {
 protected:
  // Runs build(x) on inputs in [lo, hi] and checks against f(x); mag(x, want) gives the
  // magnitude the relative tolerance applies to.
  template <typename B, typename F, typename M>
  void run(B build, F f, M mag, double rel, float lo, float hi) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(in_place ? "in place" : "own output");
      run_once(build, f, mag, rel, lo, hi, in_place);
    }
  }
  template <typename B, typename F, typename M>
  void run_once(B build, F f, M mag, double rel, float lo, float hi, bool in_place) {
    const UnaryCase& c = GetParam();
    OpTest t(12);
    t.set_in_place(in_place);
    Tensor* a = t.input(DType::F32, c.ne, c.layout, lo, hi);
    Tensor* out = build(t.graph(), a);
    Expected want;
    for_each_index(c.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
      const double x = t.at(a, i0, i1, i2, i3);
      want.value.push_back(f(x));
      want.mag.push_back(mag(x, want.value.back()));
    });
    t.check(out, want, {rel, 1e-30});
  }
};

double plain_mag(double, double want) { return std::fabs(want); }

TEST_P(UnaryTest, Scale) {
  run([](Graph& g, Tensor* a) { return ops::scale(g, a, -0.731f); },
      [](double x) { return x * double(-0.731f); }, plain_mag, 1e-6, -3, 3);
}

TEST_P(UnaryTest, Silu) {
  run(
      ops::silu, [](double x) { return x / (1.0 + std::exp(-x)); }, plain_mag, 1e-6, -10, 10);
}

// gelu's argument u is computed in float, so the tolerance grows with |2u|.
double gelu_u(double x) { return std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x); }

TEST_P(UnaryTest, Gelu) {
  run(
      ops::gelu, [](double x) { return 0.5 * x * (1.0 + std::tanh(gelu_u(x))); },
      [](double x, double want) { return std::fabs(want) * (1.0 + std::fabs(2.0 * gelu_u(x))); },
      1e-6, -5, 5);
}

TEST_P(UnaryTest, ReluSqr) {
  run(
      ops::relu_sqr, [](double x) { return x > 0 ? x * x : 0.0; }, plain_mag, 1e-7, -4, 4);
}

TEST_P(UnaryTest, Clamp) {
  run([](Graph& g, Tensor* a) { return ops::clamp(g, a, -1.25f, 0.5f); },
      [](double x) { return std::min(std::max(x, -1.25), 0.5); }, plain_mag, 0, -3, 3);
}

// Gemma 2's caps: 0.5 (values far past it saturate) and 30 (nearly the identity here).
TEST_P(UnaryTest, Softcap) {
  for (float cap : {0.5f, 30.0f}) {
    SCOPED_TRACE(cap);
    run([cap](Graph& g, Tensor* a) { return ops::softcap(g, a, cap); },
        [cap](double x) { return double(cap) * std::tanh(x / double(cap)); }, plain_mag, 1e-6, -6, 6);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, UnaryTest, ::testing::ValuesIn(kUnaryCases));

}  // namespace
}  // namespace tessera::test
