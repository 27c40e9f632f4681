// mul_mat with quantized weights (src0) on every vector level and 1, 2, 3 threads (results
// bit-identical across thread counts), two ways:
//  1. against a double-precision product of the dequantized weights and the unquantized
//     activations. The only approximation the engine adds is quantizing the activations
//     to the partner type, so the allowance is that error's bound, per output:
//       sum_e |w_e| * |x_e - x^_e|  <=  sum_e |w_e| * (d_b / 2 + 127 |d_b - fp16(d_b)|)
//     with d_b the scale of the partner block holding e (Q8_0/Q8_1: max|x| / 127 stored
//     as fp16; Q8_K: a float, no fp16 term), plus float summation error
//     4e-7 sqrt(k) sum |w_e x_e|. For activations uniform in [-1, 1] the bound is about
//     1/254 of sum |w_e| against sum |w_e x_e| ~ sum |w_e| / 2, i.e. ~1e-2 relative.
//  2. against the reference path itself: each output is the reference dot of the weight
//     row and the activation row quantized by the reference partner quantizer, to 1e-5
//     of the magnitude of the terms summed (quant_test_util.h; this pins down which rows
//     meet where).
// Cases: every weight type, odd row counts, long rows, GQA broadcast over dims 2-3,
// fewer weight rows than threads, strided activations and permuted weight planes.
// The same checks run for weights repacked into the _X16 layouts (backend/cpu/repack.h),
// which every level must also compute to the same bits (gemm_kernels.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/repack.h"
#include "backend/cpu/vec.h"
#include "core/fp16.h"
#include "ops/op_test_util.h"
#include "ops/quant_test_util.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace tessera::test {
namespace {

struct QuantMulMatCase {
  DType type;
  int64_t k, m, n;  // a: [k, m, a2, a3], b: [k, n, b2, b3]
  int64_t a2 = 1, a3 = 1, b2 = 1, b3 = 1;
  Layout lb = Layout::Contiguous;
  bool permuted_a = false;  // a is permute(0, 2, 1, 3) of a [k, a2, m, a3] leaf
};

std::ostream& operator<<(std::ostream& os, const QuantMulMatCase& c) {
  return os << dtype_name(c.type) << " k " << c.k << " m " << c.m << " n " << c.n << " a " << c.a2
            << "x" << c.a3 << " b " << c.b2 << "x" << c.b3 << " b " << layout_name(c.lb)
            << (c.permuted_a ? " a permuted" : "");
}

constexpr Layout kT = Layout::Transposed;
constexpr Layout kP = Layout::Permuted;
constexpr Layout kS = Layout::Sliced;
constexpr Layout kC = Layout::Contiguous;

const QuantMulMatCase kCases[] = {
    {DType::Q4_0, 64, 7, 5},
    {DType::Q4_1, 96, 9, 3},
    {DType::Q5_0, 32, 13, 4},
    {DType::Q5_1, 160, 5, 6},
    {DType::Q8_0, 128, 11, 2},
    {DType::Q2_K, 256, 7, 3},
    {DType::Q3_K, 512, 5, 4},
    {DType::Q4_K, 256, 9, 5},
    {DType::Q5_K, 768, 3, 2},
    {DType::Q6_K, 256, 11, 3},
    {DType::IQ2_XXS, 256, 7, 3},
    {DType::IQ2_XS, 512, 5, 4},
    {DType::IQ2_S, 768, 9, 2},
    {DType::IQ3_XXS, 256, 7, 3},
    {DType::IQ3_S, 512, 5, 4},
    {DType::IQ1_S, 256, 9, 2},
    {DType::IQ1_M, 768, 3, 5},
    {DType::IQ4_NL, 96, 9, 5},
    {DType::IQ4_XS, 512, 7, 3},
    {DType::IQ4_NL, 4096, 5, 1},
    {DType::IQ4_XS, 11008, 3, 2},
    {DType::TQ1_0, 256, 7, 3},
    {DType::TQ2_0, 512, 5, 4},
    // Decode (one activation row) and long rows.
    {DType::Q4_0, 4096, 9, 1},
    {DType::Q4_K, 4096, 5, 1},
    {DType::Q6_K, 11008, 3, 1},
    {DType::Q8_0, 4096, 3, 2},
    {DType::IQ2_XS, 4096, 3, 1},
    {DType::IQ3_S, 4096, 5, 1},
    {DType::IQ3_XXS, 2048, 3, 1},
    {DType::IQ1_M, 2048, 4, 1},
    {DType::TQ1_0, 4096, 5, 1},
    {DType::TQ2_0, 11008, 3, 1},
    // More activation rows than a block, odd everywhere.
    {DType::Q5_K, 256, 19, 23},
    {DType::Q4_1, 64, 17, 33},
    // Fewer weight rows than threads: threads split the activation rows.
    {DType::Q4_K, 256, 2, 7},
    {DType::Q5_0, 64, 1, 5},
    // GQA: 4 activation planes per weight plane, and broadcast over dim 3.
    {DType::Q8_0, 64, 5, 3, 2, 1, 8, 1},
    {DType::Q3_K, 256, 3, 2, 2, 1, 4, 2},
    {DType::IQ1_S, 256, 3, 2, 2, 1, 4, 2},
    {DType::Q5_1, 32, 4, 3, 1, 2, 3, 4},
    // Strided activations: quantized from converted rows.
    {DType::Q4_0, 64, 5, 7, 1, 1, 1, 1, kT},
    {DType::Q2_K, 256, 4, 3, 2, 1, 4, 1, kP},
    {DType::Q6_K, 256, 6, 5, 2, 1, 4, 1, kS},
    {DType::TQ1_0, 768, 3, 4, 2, 1, 4, 1, kT},
    {DType::TQ2_0, 256, 5, 19, 1, 1, 1, 1, kS},
    // Weight planes out of order (rows dense).
    {DType::Q4_1, 64, 5, 3, 3, 1, 3, 1, kC, true},
    {DType::Q4_K, 256, 3, 2, 2, 1, 4, 1, kP, true},
};

// Blocks of random bytes with random fp16 scales in [-0.05, 0.05] (any bit pattern of the
// quants and sub-block scales is a valid block).
void random_blocks(DType type, std::vector<uint8_t>& bytes, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (uint8_t& b : bytes) b = uint8_t(byte(rng));
  for (size_t off = 0; off < bytes.size(); off += dtype_traits(type).type_size) {
    for (size_t field : fp16_fields(type)) {
      const uint16_t h = f32_to_f16(scale(rng));
      std::memcpy(bytes.data() + off + field, &h, 2);
    }
    if (type == DType::IQ1_M) set_iq1_m_scale(bytes.data() + off, f32_to_f16(scale(rng)));
  }
}

// A leaf of quantized weights: random floats quantized with the reference quantizer (or
// random blocks, for a format the engine only reads), in memory the test owns (the
// harness fills only float leaves).
Tensor* quant_leaf(OpTest& t, DType type, const Shape& ne, std::vector<uint8_t>& bytes,
                   std::mt19937& rng) {
  Tensor* w = t.graph().arena().new_tensor(type, ne);
  w->flags |= kFlagInput;
  const int64_t n = w->nelements();
  bytes.assign(dtype_row_size(type, n), 0);
  if (can_quantize(type)) {
    std::normal_distribution<float> dist(0.0f, 0.05f);
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = dist(rng);
    const std::vector<float> unit(static_cast<size_t>(ne[0]), 1.0f);
    quant::quantize_rows(type, x.data(), bytes.data(), n / ne[0], ne[0],
                         quant::format(type)->needs_importance ? unit.data() : nullptr);
  } else {
    random_blocks(type, bytes, rng);
  }
  w->data = bytes.data();
  return w;
}

// Row (i1, i2, i3) of a quantized leaf.
const uint8_t* leaf_row(const Tensor* t, int64_t i1, int64_t i2, int64_t i3) {
  return static_cast<const uint8_t*>(t->data) + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

// What quantizing x to `partner` may change: per element, the bound of |x - x^|.
std::vector<double> partner_error_bound(DType partner, const std::vector<float>& x) {
  std::vector<double> bound(x.size());
  const size_t bs = size_t(dtype_traits(partner).block_size);
  for (size_t b = 0; b < x.size(); b += bs) {
    double amax = 0;
    for (size_t e = b; e < b + bs; ++e) amax = std::max(amax, std::fabs(double(x[e])));
    const double d = partner == DType::Q8_K ? amax / 127 : double(amax / 127);
    const double stored = partner == DType::Q8_K ? d : double(f16_to_f32(f32_to_f16(float(d))));
    const double e_max = d / 2 * (1 + 1e-6) + 127 * std::fabs(d - stored);
    for (size_t e = b; e < b + bs; ++e) bound[e] = e_max;
  }
  return bound;
}

// Builds mul_mat(weights, activations) for case c (with the weights repacked into their
// _X16 layout when `repack`), checks it, and returns its result with one thread.
std::vector<double> check_case(const QuantMulMatCase& c, bool repack) {
  const quant::Format* f = quant::format(c.type);
  EXPECT_NE(f, nullptr);
  const DType partner = f->dot_partner;
  std::mt19937 rng(uint32_t(c.k * 31 + c.m * 7 + c.n));
  std::vector<uint8_t> weights;
  OpTest t(43);
  Tensor* leaf = c.permuted_a ? quant_leaf(t, c.type, {c.k, c.a2, c.m, c.a3}, weights, rng)
                              : quant_leaf(t, c.type, {c.k, c.m, c.a2, c.a3}, weights, rng);
  Tensor* a = c.permuted_a ? ops::permute(t.graph(), leaf, 0, 2, 1, 3) : leaf;
  std::vector<uint8_t> repacked;
  if (repack) {  // the harness reads weights from the original leaf below; a reads these
    repacked.resize(weights.size());
    cpu::repack_rows(c.type, weights.data(), repacked.data(), c.m, c.k);
    a = t.graph().arena().new_tensor(cpu::repacked_type(c.type), leaf->ne);
    a->flags |= kFlagInput;
    a->data = repacked.data();
  }
  Tensor* b = t.input(DType::F32, {c.k, c.n, c.b2, c.b3}, c.lb, -1, 1);
  Tensor* out = ops::mul_mat(t.graph(), a, b);
  // Row (i1, i2, i3) of a, read from the leaf (views get their data only when the
  // harness plans the graph).
  auto a_row = [&](int64_t i1, int64_t i2, int64_t i3) {
    return c.permuted_a ? leaf_row(leaf, i2, i1, i3) : leaf_row(leaf, i1, i2, i3);
  };

  Expected exact, ref_path;
  std::vector<float> w(static_cast<size_t>(c.k));
  std::vector<float> x(static_cast<size_t>(c.k));
  std::vector<uint8_t> xq(dtype_row_size(partner, c.k));
  for_each_index({c.m, c.n, c.b2, c.b3}, [&](int64_t i, int64_t j, int64_t p2, int64_t p3) {
    const int64_t a2 = p2 / (c.b2 / c.a2), a3 = p3 / (c.b3 / c.a3);
    const uint8_t* wq = a_row(i, a2, a3);
    f->dequantize(wq, w.data(), c.k);
    for (int64_t e = 0; e < c.k; ++e) x[size_t(e)] = float(t.at(b, e, j, p2, p3));
    const std::vector<double> err = partner_error_bound(partner, x);
    double sum = 0, mag = 0, bound = 0;
    for (size_t e = 0; e < size_t(c.k); ++e) {
      sum += double(w[e]) * double(x[e]);
      mag += std::fabs(double(w[e]) * double(x[e]));
      bound += std::fabs(double(w[e])) * err[e];
    }
    exact.value.push_back(sum);
    exact.mag.push_back(bound + 4e-7 * std::sqrt(double(c.k)) * mag);
    // The reference path: reference partner quantizer and reference dot.
    quant::format(partner)->quantize(x.data(), xq.data(), c.k);
    ref_path.value.push_back(f->vec_dot(c.k, wq, xq.data()));
    ref_path.mag.push_back(term_magnitude(c.type, wq, xq.data(), c.k));
  });
  t.check(out, exact, {1.0, 1e-30});
  t.check(out, ref_path, {1e-5, 1e-30});
  return t.run(out, 1);
}

class MulMatQuantTest : public ::testing::TestWithParam<QuantMulMatCase> {};

TEST_P(MulMatQuantTest, MatchesReference) { check_case(GetParam(), false); }

// Repacked weights: rows in groups of 16, two dims, dense.
const QuantMulMatCase kX16Cases[] = {
    {DType::Q4_0, 64, 16, 5},   {DType::Q8_0, 128, 32, 3},  {DType::Q4_0, 2080, 48, 1},
    {DType::Q8_0, 4096, 16, 1}, {DType::Q4_0, 96, 16, 17},  {DType::Q8_0, 32, 64, 9},
    {DType::Q4_0, 64, 32, 7, 1, 1, 1, 1, kT}, {DType::Q8_0, 64, 16, 6, 1, 1, 2, 1, kS},
    {DType::Q4_0, 160, 16, 70},  // more columns than one kernel tile, odd tail
    {DType::Q4_K, 256, 16, 5},   {DType::Q4_K, 2048, 32, 1}, {DType::Q4_K, 512, 16, 19},
    {DType::Q4_K, 256, 16, 3, 1, 1, 1, 1, kT},
    {DType::Q6_K, 256, 16, 5},   {DType::Q6_K, 2048, 32, 1}, {DType::Q6_K, 768, 16, 11},
    // Two columns (AVX2 does both 8-row halves in one pass up to two columns).
    {DType::Q4_K, 512, 16, 2},   {DType::Q6_K, 256, 32, 2},  {DType::Q8_0, 64, 16, 2},
    {DType::IQ4_NL, 64, 16, 5},  {DType::IQ4_NL, 2080, 48, 1}, {DType::IQ4_NL, 160, 32, 70},
    {DType::IQ4_NL, 96, 16, 2},  {DType::IQ4_NL, 64, 32, 7, 1, 1, 1, 1, kT},
    {DType::IQ4_XS, 256, 16, 5}, {DType::IQ4_XS, 2048, 32, 1}, {DType::IQ4_XS, 512, 16, 19},
    {DType::IQ4_XS, 768, 16, 2}, {DType::IQ4_XS, 256, 16, 3, 1, 1, 1, 1, kT},
};

class MulMatX16Test : public ::testing::TestWithParam<QuantMulMatCase> {};

TEST_P(MulMatX16Test, MatchesReferenceOnEveryLevelToTheBit) {
  const QuantMulMatCase& c = GetParam();
  const cpu::Isa saved = cpu::active_isa();
  std::vector<std::vector<double>> results;
  for (cpu::Isa isa : {cpu::Isa::Reference, cpu::Isa::Avx2, cpu::Isa::Avx512}) {
    if (!cpu::set_active_isa(isa)) continue;
    results.push_back(check_case(c, true));
  }
  cpu::set_active_isa(saved);
  for (size_t i = 1; i < results.size(); ++i) {
    ASSERT_EQ(results[i].size(), results[0].size());
    for (size_t e = 0; e < results[0].size(); ++e) {
      ASSERT_EQ(results[i][e], results[0][e]) << "level " << i << " element " << e;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, MulMatX16Test, ::testing::ValuesIn(kX16Cases));

INSTANTIATE_TEST_SUITE_P(Cases, MulMatQuantTest, ::testing::ValuesIn(kCases));

}  // namespace
}  // namespace tessera::test
