// mul_mat against a double-precision reference: odd sizes, F16/BF16 weights, strided
// operands, GQA broadcasting over dims 2-3, fewer weight rows than threads, and F16 and
// BF16 weights repacked into the 16-row interleaved layouts (backend/cpu/repack.h).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/repack.h"
#include "backend/cpu/vec.h"
#include "core/fp16.h"
#include "ops/op_test_util.h"

namespace tessera::test {
namespace {

struct MulMatCase {
  int64_t k, m, n;  // a: [k, m, a2, a3], b: [k, n, b2, b3]
  int64_t a2 = 1, a3 = 1, b2 = 1, b3 = 1;
  DType type = DType::F32;
  Layout la = Layout::Contiguous, lb = Layout::Contiguous;
  bool repack = false;  // a (F16 / BF16, rows a multiple of 16) multiplied in its _X16 layout
};

std::ostream& operator<<(std::ostream& os, const MulMatCase& c) {
  return os << dtype_name(c.type) << " k " << c.k << " m " << c.m << " n " << c.n << " a " << c.a2
            << "x" << c.a3 << " b " << c.b2 << "x" << c.b3 << " a " << layout_name(c.la) << " b "
            << layout_name(c.lb) << (c.repack ? " repacked" : "");
}

constexpr DType F16 = DType::F16;
constexpr DType BF16 = DType::BF16;
constexpr DType F32 = DType::F32;
constexpr Layout kC = Layout::Contiguous;
constexpr Layout kT = Layout::Transposed;
constexpr Layout kP = Layout::Permuted;
constexpr Layout kS = Layout::Sliced;

const MulMatCase kMulMatCases[] = {
    {1, 1, 1},
    {3, 5, 2},
    {17, 7, 9},
    {255, 33, 6},
    {4097, 17, 5},
    {64, 2, 11},  // fewer src0 rows than threads
    {1, 1, 7},
    {32, 10, 7, 2, 1, 8, 1},  // GQA: 4 src1 planes per src0 plane
    {48, 6, 3, 2, 1, 8, 2},   // and broadcast over dim 3
    {16, 5, 4, 1, 2, 3, 4},
    {4097, 9, 1, 1, 1, 1, 1, F16},  // decode: direct F16 dot
    {255, 13, 9, 1, 1, 1, 1, F16},  // prefill: converted F16 rows
    {130, 7, 3, 2, 1, 4, 1, F16},
    {255, 9, 5, 1, 1, 1, 1, BF16},
    {67, 8, 6, 1, 1, 1, 1, BF16},
    {4097, 9, 1, 1, 1, 1, 1, BF16},  // decode: direct BF16 dot
    {130, 7, 1, 2, 1, 4, 1, BF16},   // 2 src1 planes per src0 plane, 1 row each: direct
    {33, 19, 6, 1, 1, 1, 1, F32, kT, kC},  // strided src0 rows
    {33, 19, 6, 1, 1, 1, 1, F16, kT, kC},
    {40, 11, 7, 1, 1, 1, 1, F32, kC, kT},  // strided src1 rows: packed by prepare
    {40, 11, 7, 3, 1, 3, 1, F32, kP, kP},
    {24, 6, 5, 2, 1, 4, 1, F32, kS, kS},
    {24, 6, 5, 2, 1, 4, 1, BF16, kS, kT},
    {4097, 16, 1, 1, 1, 1, 1, F16, kC, kC, true},  // decode
    {255, 32, 13, 1, 1, 1, 1, F16, kC, kC, true},  // one full tile and a tail
    {64, 48, 30, 1, 1, 1, 1, F16, kC, kT, true},   // strided activations: packed
    {33, 16, 5, 1, 1, 2, 1, F16, kC, kS, true},    // activation planes flattened
};

// The _X16 copy of a contiguous F16 or BF16 leaf, in memory the test owns (the harness
// leaves tensors with their own data alone).
Tensor* repacked(OpTest& t, const Tensor* a, std::vector<uint16_t>& halves,
                 std::vector<uint16_t>& packed) {
  halves.clear();
  for_each_index(a->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const float v = float(t.at(a, i0, i1, i2, i3));
    halves.push_back(a->type == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v));
  });
  packed.resize(halves.size());
  cpu::repack_rows(a->type, halves.data(), packed.data(), a->ne[1], a->ne[0]);
  Tensor* x = t.graph().arena().new_tensor(cpu::repacked_type(a->type), a->ne);
  x->flags |= kFlagInput;
  x->data = packed.data();
  return x;
}

class MulMatTest : public ::testing::TestWithParam<MulMatCase> {};

// Builds mul_mat for case c, checks it on every level and thread count, and returns its
// result with one thread under the active level.
std::vector<double> check_case(const MulMatCase& c) {
  OpTest t(41);
  Tensor* a = t.input(c.type, {c.k, c.m, c.a2, c.a3}, c.la, -1, 1);
  Tensor* b = t.input(F32, {c.k, c.n, c.b2, c.b3}, c.lb, -1, 1);
  std::vector<uint16_t> halves, packed;
  Tensor* out = ops::mul_mat(t.graph(), c.repack ? repacked(t, a, halves, packed) : a, b);
  Expected want;
  for_each_index({c.m, c.n, c.b2, c.b3}, [&](int64_t i, int64_t j, int64_t p2, int64_t p3) {
    const int64_t a2 = p2 / (c.b2 / c.a2), a3 = p3 / (c.b3 / c.a3);
    double sum = 0, mag = 0;
    for (int64_t x = 0; x < c.k; ++x) {
      const double prod = t.at(a, x, i, a2, a3) * t.at(b, x, j, p2, p3);
      sum += prod;
      mag += std::fabs(prod);
    }
    want.value.push_back(sum);
    want.mag.push_back(mag);
  });
  // Float accumulation error grows about like sqrt(k) relative to sum |a_i b_i|. BF16_X16
  // rounds the activations to bf16 (gemm_kernels.h), each product off by up to 2^-9.
  const bool bf16_x16 = c.repack && c.type == BF16;
  t.check(out, want, {bf16_x16 ? 2.5e-3 : 4e-7 * std::sqrt(double(c.k)), 1e-30});
  return t.run(out, 1);
}

TEST_P(MulMatTest, MatchesReference) { check_case(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cases, MulMatTest, ::testing::ValuesIn(kMulMatCases));

// F16 and BF16 weights repacked: every level computes the same bits (gemm_kernels.h).
// Widths: decode, two columns (one pass over both 8-row halves on AVX2), full tiles and
// tails of 3 (AVX2), 6 (AVX-512, two groups: m = 32, 48) and 12 (AVX-512, one group:
// m = 16, the odd third of 48) columns; odd and even k (even only for BF16, whose layout
// holds pairs); a BF16 prompt past one K-block and one column block of the AVX2 kernel.
const MulMatCase kHalfX16Cases[] = {
    {4097, 16, 1, 1, 1, 1, 1, F16, kC, kC, true}, {64, 32, 2, 1, 1, 1, 1, F16, kC, kC, true},
    {255, 32, 13, 1, 1, 1, 1, F16, kC, kC, true}, {31, 16, 7, 1, 1, 1, 1, F16, kC, kC, true},
    {96, 16, 25, 1, 1, 1, 1, F16, kC, kC, true},  {64, 48, 30, 1, 1, 1, 1, F16, kC, kT, true},
    {4096, 16, 1, 1, 1, 1, 1, BF16, kC, kC, true}, {64, 32, 2, 1, 1, 1, 1, BF16, kC, kC, true},
    {254, 32, 13, 1, 1, 1, 1, BF16, kC, kC, true}, {30, 16, 7, 1, 1, 1, 1, BF16, kC, kC, true},
    {300, 16, 130, 1, 1, 1, 1, BF16, kC, kC, true}, {64, 48, 30, 1, 1, 1, 1, BF16, kC, kT, true},
    {34, 16, 5, 1, 1, 2, 1, BF16, kC, kS, true},
};

class MulMatHalfX16Test : public ::testing::TestWithParam<MulMatCase> {};

TEST_P(MulMatHalfX16Test, MatchesReferenceOnEveryLevelToTheBit) {
  const MulMatCase& c = GetParam();
  const cpu::Isa saved = cpu::active_isa();
  std::vector<std::vector<double>> results;
  for (cpu::Isa isa : {cpu::Isa::Reference, cpu::Isa::Avx2, cpu::Isa::Avx512}) {
    if (!cpu::set_active_isa(isa)) continue;
    results.push_back(check_case(c));
  }
  cpu::set_active_isa(saved);
  for (size_t i = 1; i < results.size(); ++i) {
    ASSERT_EQ(results[i].size(), results[0].size());
    for (size_t e = 0; e < results[0].size(); ++e) {
      ASSERT_EQ(results[i][e], results[0][e]) << "level " << i << " element " << e;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, MulMatHalfX16Test, ::testing::ValuesIn(kHalfX16Cases));

}  // namespace
}  // namespace tessera::test
