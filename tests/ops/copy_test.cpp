// cpy, cont, concat, get_rows and set_rows: exact results expected (conversions round
// once, to nearest even).
#include <gtest/gtest.h>

#include "ops/op_test_util.h"

namespace tessera::test {
namespace {

constexpr Tolerance kExact{0, 0};

// Values of t (a leaf or a view of one) in row-major order.
std::vector<double> values_of(const OpTest& t, const Tensor* x) {
  std::vector<double> v;
  for_each_index(x->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    v.push_back(t.at(x, i0, i1, i2, i3));
  });
  return v;
}

struct CpyCase {
  DType src_type, dst_type;
  Shape src_ne, dst_ne;
  Layout src_layout = Layout::Contiguous, dst_layout = Layout::Contiguous;
};

std::ostream& operator<<(std::ostream& os, const CpyCase& c) {
  return os << dtype_name(c.src_type) << " " << layout_name(c.src_layout) << " " << c.src_ne[0]
            << "x" << c.src_ne[1] << "x" << c.src_ne[2] << " -> " << dtype_name(c.dst_type) << " "
            << layout_name(c.dst_layout) << " " << c.dst_ne[0] << "x" << c.dst_ne[1] << "x"
            << c.dst_ne[2];
}

constexpr DType F32 = DType::F32;
constexpr DType F16 = DType::F16;
constexpr DType BF16 = DType::BF16;

const CpyCase kCpyCases[] = {
    {F32, F32, {17, 3, 1, 1}, {17, 3, 1, 1}},
    {F32, F16, {4097, 2, 1, 1}, {4097, 2, 1, 1}},
    {F32, BF16, {255, 3, 1, 1}, {255, 3, 1, 1}},
    {F16, F32, {33, 5, 1, 1}, {33, 5, 1, 1}},
    {BF16, F32, {33, 5, 1, 1}, {33, 5, 1, 1}},
    {F16, F16, {9, 4, 2, 1}, {9, 4, 2, 1}, Layout::Transposed, Layout::Contiguous},
    {F32, F32, {6, 4, 2, 1}, {12, 4, 1, 1}},  // other shape
    {F32, F16, {5, 6, 1, 1}, {3, 10, 1, 1}, Layout::Transposed, Layout::Contiguous},
    {F32, F16, {16, 7, 1, 1}, {16, 7, 1, 1}, Layout::Contiguous, Layout::Transposed},
    {F32, F32, {20, 3, 4, 1}, {20, 3, 4, 1}, Layout::Permuted, Layout::Sliced},
    {F32, BF16, {13, 6, 1, 1}, {13, 6, 1, 1}, Layout::Sliced, Layout::Permuted},
};

class CpyTest : public ::testing::TestWithParam<CpyCase> {};

TEST_P(CpyTest, Cpy) {
  const CpyCase& c = GetParam();
  OpTest t(51);
  Tensor* src = t.input(c.src_type, c.src_ne, c.src_layout, -3, 3);
  Tensor* dst = t.input(c.dst_type, c.dst_ne, c.dst_layout, -3, 3);
  Tensor* out = ops::cpy(t.graph(), src, dst);
  Expected want;
  for (double v : values_of(t, src)) want.value.push_back(round_to(c.dst_type, v));
  t.check(out, want, kExact);
}

TEST_P(CpyTest, Cont) {
  const CpyCase& c = GetParam();
  OpTest t(52);
  Tensor* src = t.input(c.src_type, c.src_ne, c.src_layout, -3, 3);
  Tensor* out = ops::cont(t.graph(), src, c.dst_type);
  Expected want;
  for (double v : values_of(t, src)) want.value.push_back(round_to(c.dst_type, v));
  t.check(out, want, kExact);
}

INSTANTIATE_TEST_SUITE_P(Cases, CpyTest, ::testing::ValuesIn(kCpyCases));

struct ConcatCase {
  Shape a, b;
  int dim;
  Layout la = Layout::Contiguous, lb = Layout::Contiguous;
};

std::ostream& operator<<(std::ostream& os, const ConcatCase& c) {
  return os << "dim " << c.dim << " a " << c.a[0] << "x" << c.a[1] << "x" << c.a[2] << "x" << c.a[3]
            << " " << layout_name(c.la) << " b " << c.b[0] << "x" << c.b[1] << "x" << c.b[2] << "x"
            << c.b[3] << " " << layout_name(c.lb);
}

const ConcatCase kConcatCases[] = {
    {{3, 2, 1, 1}, {5, 2, 1, 1}, 0},
    {{17, 3, 2, 1}, {17, 4, 2, 1}, 1},
    {{8, 3, 2, 2}, {8, 3, 1, 2}, 2},
    {{8, 3, 2, 1}, {8, 3, 2, 2}, 3},
    {{12, 5, 1, 1}, {7, 5, 1, 1}, 0, Layout::Transposed, Layout::Sliced},
    {{12, 5, 3, 1}, {12, 2, 3, 1}, 1, Layout::Permuted, Layout::Transposed},
};

class ConcatTest : public ::testing::TestWithParam<ConcatCase> {};

TEST_P(ConcatTest, Concat) {
  const ConcatCase& c = GetParam();
  OpTest t(53);
  Tensor* a = t.input(F32, c.a, c.la);
  Tensor* b = t.input(F32, c.b, c.lb);
  Tensor* out = ops::concat(t.graph(), a, b, c.dim);
  Expected want;
  for_each_index(out->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    int64_t i[4] = {i0, i1, i2, i3};
    const bool from_a = i[c.dim] < c.a[c.dim];
    if (!from_a) i[c.dim] -= c.a[c.dim];
    want.value.push_back(t.at(from_a ? a : b, i[0], i[1], i[2], i[3]));
  });
  t.check(out, want, kExact);
}

INSTANTIATE_TEST_SUITE_P(Cases, ConcatTest, ::testing::ValuesIn(kConcatCases));

struct RowsCase {
  DType type;
  int64_t ne0, rows;
  Layout layout = Layout::Contiguous;
};

std::ostream& operator<<(std::ostream& os, const RowsCase& c) {
  return os << dtype_name(c.type) << " " << c.ne0 << "x" << c.rows << " " << layout_name(c.layout);
}

const RowsCase kRowsCases[] = {
    {F32, 1, 3},
    {F32, 17, 9},
    {F16, 4097, 5},
    {BF16, 255, 7},
    {F16, 3, 11},
    {F32, 12, 7, Layout::Transposed},
    {F16, 10, 6, Layout::Transposed},
    {BF16, 9, 5, Layout::Sliced},
};

class RowsTest : public ::testing::TestWithParam<RowsCase> {};

// Ids with repeats and out-of-order rows.
std::vector<int32_t> some_ids(int64_t rows) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < 7; ++i) ids.push_back(int32_t((i * 5 + 2) % rows));
  ids.push_back(int32_t(rows - 1));
  return ids;
}

TEST_P(RowsTest, GetRows) {
  const RowsCase& c = GetParam();
  OpTest t(54);
  Tensor* a = t.input(c.type, {c.ne0, c.rows, 1, 1}, c.layout, -3, 3);
  const std::vector<int32_t> ids = some_ids(c.rows);
  Tensor* out = ops::get_rows(t.graph(), a, t.ids(ids));
  Expected want;
  for (int32_t id : ids) {
    for (int64_t i0 = 0; i0 < c.ne0; ++i0) want.value.push_back(t.at(a, i0, id));
  }
  t.check(out, want, kExact);
}

// Distinct ids, then (when there are enough rows) a repeated one: the last write wins.
TEST_P(RowsTest, SetRows) {
  const RowsCase& c = GetParam();
  OpTest t(55);
  Tensor* dst = t.input(c.type, {c.ne0, c.rows, 1, 1}, c.layout, -3, 3);
  std::vector<int32_t> ids = {int32_t(c.rows - 1), 0};
  if (c.rows > 3) ids = {2, int32_t(c.rows - 1), 0, 2};
  Tensor* src = t.input(F32, {c.ne0, int64_t(ids.size()), 1, 1},
                        c.ne0 > 1 ? Layout::Transposed : Layout::Contiguous, -3, 3);
  Tensor* out = ops::set_rows(t.graph(), dst, src, t.ids(ids));
  std::vector<double> want_rows = values_of(t, dst);
  for (size_t j = 0; j < ids.size(); ++j) {
    for (int64_t i0 = 0; i0 < c.ne0; ++i0) {
      want_rows[size_t(ids[j] * c.ne0 + i0)] = round_to(c.type, t.at(src, i0, int64_t(j)));
    }
  }
  t.check(out, {want_rows, {}}, kExact);
}

INSTANTIATE_TEST_SUITE_P(Cases, RowsTest, ::testing::ValuesIn(kRowsCases));

// The source is a column slice of a wider matrix, as the values are in the output of a
// fused q/k/v projection: dense rows, a larger row stride, an offset.
TEST(SetRowsStrided, SourceRowsOfAFusedProjection) {
  OpTest t(56);
  constexpr int64_t kRow = 8, kFused = 24, kTokens = 3;
  Tensor* dst = t.input(F16, {kRow, 6, 1, 1}, -3, 3);
  Tensor* fused = t.input(F32, {kFused, kTokens, 1, 1}, -3, 3);
  Tensor* src = ops::view(t.graph(), fused, {kRow, kTokens, 1, 1}, fused->nb, 16 * sizeof(float));
  const std::vector<int32_t> ids = {4, 0, 5};
  Tensor* out = ops::set_rows(t.graph(), dst, src, t.ids(ids));
  std::vector<double> want = values_of(t, dst);
  for (size_t j = 0; j < ids.size(); ++j) {
    for (int64_t i0 = 0; i0 < kRow; ++i0) {
      want[size_t(ids[j] * kRow + i0)] = round_to(F16, t.at(fused, 16 + i0, int64_t(j)));
    }
  }
  t.check(out, {want, {}}, kExact);
}

}  // namespace
}  // namespace tessera::test
