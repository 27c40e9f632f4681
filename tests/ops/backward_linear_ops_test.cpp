// The linear backward ops (acc, acc_zeros, sum_to, get_rows_back) against plain
// double-precision references: strided windows, broadcast ratios, repeated ids, strided
// inputs and acc over its own input.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "ops/grad_test_util.h"

namespace tessera::test {
namespace {

// One float add per element of the window: an exact rounding.
constexpr Tolerance kAccTol{1e-7, 0};
// Float sums of at most 120 terms: within 120 * 2^-24 * sum |a| < 1e-5 sum |a|.
constexpr Tolerance kSumTol{1e-5, 0};

std::string shape_str(const Shape& ne) {
  std::ostringstream s;
  s << ne[0] << "x" << ne[1] << "x" << ne[2] << "x" << ne[3];
  return s.str();
}

int64_t count(const Shape& ne) { return ne[0] * ne[1] * ne[2] * ne[3]; }

// --- acc, acc_zeros -------------------------------------------------------------------

struct AccCase {
  Shape a;         // the result's shape
  Shape b;         // the window's extents
  Shape nb;        // the window's strides, in elements of the (contiguous) result
  int64_t offset;  // the window's first element
  Layout la = Layout::Contiguous, lb = Layout::Contiguous;
};

std::ostream& operator<<(std::ostream& os, const AccCase& c) {
  return os << "a " << shape_str(c.a) << " " << layout_name(c.la) << ", b " << shape_str(c.b) << " "
            << layout_name(c.lb) << " strides " << shape_str(c.nb) << " offset " << c.offset;
}

const AccCase kAccCases[] = {
    {{8, 6, 4, 3}, {5, 3, 2, 1}, {1, 8, 48, 192}, 1 + 2 * 8 + 48},  // a block inside
    {{6, 5, 4, 2}, {5, 6, 4, 2}, {6, 1, 30, 120}, 0},               // all of a transposed view
    {{6, 5, 4, 2}, {3, 4, 2, 2}, {30, 1, 6, 120}, 2 + 3 * 6 + 30},  // part of a permuted view
    {{20, 3, 1, 1}, {7, 3, 1, 1}, {2, 20, 60, 60}, 3},              // every second element
    {{40, 7, 1, 1}, {7, 20, 1, 1}, {40, 2, 280, 280}, 1, Layout::Contiguous, Layout::Sliced},
    {{4097, 3, 1, 1}, {4097, 1, 1, 1}, {1, 4097, 4097, 4097}, 4097},  // one long row
    {{100, 1, 1, 1}, {4, 5, 2, 1}, {1, 4, 20, 40}, 10},               // a part of a packed result
    {{300, 2, 1, 1}, {300, 2, 1, 1}, {1, 300, 600, 600}, 0, Layout::Transposed},
    {{33, 9, 2, 1}, {33, 9, 2, 1}, {1, 33, 297, 594}, 0, Layout::Contiguous, Layout::Transposed},
    {{19, 5, 4, 1}, {10, 5, 4, 1}, {1, 19, 95, 380}, 4, Layout::Sliced, Layout::Permuted},
};

class AccTest : public ::testing::TestWithParam<AccCase> {
 protected:
  // acc (or acc_zeros) of the case, run over its own input when in_place.
  void run(bool zeros, bool in_place) {
    const AccCase& c = GetParam();
    OpTest t(51);
    t.set_in_place(in_place);
    Tensor* a = zeros ? nullptr : t.input(DType::F32, c.a, c.la, -2, 2);
    Tensor* b = t.input(DType::F32, c.b, c.lb, -2, 2);
    Strides nb;
    for (int d = 0; d < kMaxDims; ++d) nb[size_t(d)] = size_t(c.nb[size_t(d)]) * sizeof(float);
    const size_t offset = size_t(c.offset) * sizeof(float);
    Tensor* out = zeros ? ops::acc_zeros(t.graph(), c.a, b, nb, offset)
                        : ops::acc(t.graph(), a, b, nb, offset);
    Expected want;
    want.value = zeros ? std::vector<double>(size_t(count(c.a)), 0.0) : values_of(t, a);
    for_each_index(c.b, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
      const int64_t k = c.offset + i0 * c.nb[0] + i1 * c.nb[1] + i2 * c.nb[2] + i3 * c.nb[3];
      want.value[size_t(k)] += t.at(b, i0, i1, i2, i3);
    });
    t.check(out, want, kAccTol);
    const bool over_a = in_place && !zeros && c.la == Layout::Contiguous;
    EXPECT_EQ(a != nullptr && out->data == a->data, over_a) << "in place as planned";
  }
};

TEST_P(AccTest, Acc) {
  for (bool in_place : {false, true}) {
    SCOPED_TRACE(in_place ? "in place" : "own output");
    run(false, in_place);
  }
}

TEST_P(AccTest, AccZeros) { run(true, false); }

INSTANTIATE_TEST_SUITE_P(Windows, AccTest, ::testing::ValuesIn(kAccCases));

// --- sum_to ---------------------------------------------------------------------------

struct SumToCase {
  Shape a, ne;
  Layout layout = Layout::Contiguous;
};

std::ostream& operator<<(std::ostream& os, const SumToCase& c) {
  return os << shape_str(c.a) << " " << layout_name(c.layout) << " to " << shape_str(c.ne);
}

const SumToCase kSumToCases[] = {
    {{7, 33, 1, 1}, {7, 1, 1, 1}},
    {{4097, 5, 1, 1}, {4097, 1, 1, 1}},
    {{300, 64, 1, 1}, {300, 1, 1, 1}},
    {{5, 4, 3, 2}, {1, 1, 1, 1}},
    {{33, 4, 2, 1}, {1, 4, 1, 1}},
    {{12, 6, 4, 2}, {3, 2, 1, 2}},
    {{6, 4, 3, 2}, {6, 4, 3, 2}},
    {{16, 3, 1, 1}, {2, 3, 1, 1}},
    {{48, 5, 1, 1}, {16, 1, 1, 1}},
    {{40, 9, 3, 1}, {40, 1, 3, 1}, Layout::Transposed},
    {{40, 9, 1, 1}, {1, 9, 1, 1}, Layout::Transposed},
    {{33, 4, 3, 1}, {33, 1, 1, 1}, Layout::Permuted},
    {{255, 5, 1, 2}, {17, 1, 1, 2}, Layout::Sliced},
};

class SumToTest : public ::testing::TestWithParam<SumToCase> {};

TEST_P(SumToTest, MatchesReference) {
  const SumToCase& c = GetParam();
  OpTest t(52);
  Tensor* a = t.input(DType::F32, c.a, c.layout, -2, 2);
  Tensor* out = ops::sum_to(t.graph(), a, c.ne);
  Expected want;
  want.value.assign(size_t(count(c.ne)), 0.0);
  want.mag.assign(size_t(count(c.ne)), 0.0);
  for_each_index(c.a, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const int64_t k =
        i0 % c.ne[0] +
        c.ne[0] * (i1 % c.ne[1] + c.ne[1] * (i2 % c.ne[2] + c.ne[2] * (i3 % c.ne[3])));
    const double v = t.at(a, i0, i1, i2, i3);
    want.value[size_t(k)] += v;
    want.mag[size_t(k)] += std::fabs(v);
  });
  t.check(out, want, kSumTol);
}

INSTANTIATE_TEST_SUITE_P(Shapes, SumToTest, ::testing::ValuesIn(kSumToCases));

// --- get_rows_back --------------------------------------------------------------------

struct RowsBackCase {
  int64_t ne0;
  std::vector<int32_t> ids;
  int64_t n_rows;
  Layout layout = Layout::Contiguous;
};

std::ostream& operator<<(std::ostream& os, const RowsBackCase& c) {
  os << "ne0 " << c.ne0 << " rows " << c.n_rows << " " << layout_name(c.layout) << " ids";
  for (int32_t id : c.ids) os << " " << id;
  return os;
}

std::vector<int32_t> spread_ids(int n, int n_rows) {
  std::vector<int32_t> ids;
  for (int j = 0; j < n; ++j) ids.push_back(int32_t(j * 7 % n_rows));
  return ids;
}

const RowsBackCase kRowsBackCases[] = {
    {1, {0, 0, 0}, 2},  // row 1 never picked: zeros
    {7, {3, 1, 3, 0, 3}, 5},
    {33, {2, 2, 1, 0, 2, 1}, 4, Layout::Transposed},
    {300, {5, 1, 5, 8, 0, 5, 5, 1, 2, 8, 5, 3}, 9, Layout::Sliced},
    {4097, {2, 0, 2}, 4},
    {64, spread_ids(40, 11), 11, Layout::Permuted},
    {48, spread_ids(70, 3), 6},
};

class GetRowsBackTest : public ::testing::TestWithParam<RowsBackCase> {};

TEST_P(GetRowsBackTest, MatchesReference) {
  const RowsBackCase& c = GetParam();
  const int64_t n = int64_t(c.ids.size());
  OpTest t(53);
  Tensor* dy = t.input(DType::F32, {c.ne0, n, 1, 1}, c.layout, -2, 2);
  Tensor* out = ops::get_rows_back(t.graph(), dy, t.ids(c.ids), c.n_rows);
  Expected want;
  want.value.assign(size_t(c.ne0 * c.n_rows), 0.0);
  want.mag.assign(want.value.size(), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < c.ne0; ++i) {
      const double v = t.at(dy, i, j);
      want.value[size_t(c.ids[size_t(j)] * c.ne0 + i)] += v;
      want.mag[size_t(c.ids[size_t(j)] * c.ne0 + i)] += std::fabs(v);
    }
  }
  t.check(out, want, kSumTol);
}

INSTANTIATE_TEST_SUITE_P(Ids, GetRowsBackTest, ::testing::ValuesIn(kRowsBackCases));

// An id past n_rows is the caller's bug: a CHECK, not a silent skip.
TEST(GetRowsBackDeathTest, IdOutOfRange) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        OpTest t(54);
        Tensor* dy = t.input(DType::F32, {8, 2, 1, 1});
        t.run(ops::get_rows_back(t.graph(), dy, t.ids({0, 3}), 3), 1);
      },
      "get_rows_back: id out of range");
}

}  // namespace
}  // namespace tessera::test
