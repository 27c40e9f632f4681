// mul_mat and the fused attention op on CUDA device 0 against the CPU backend, from the
// same random inputs (cuda_op_test_util.h).
//
// mul_mat: every weight type the GPU multiplies (F32, F16, BF16 and every type with a
// decoder in dequant.h) times 1, 2, 8 columns (the matrix-vector kernels, mmvq.cu) and 9,
// 64, 67 (cuBLAS), odd row counts, long rows, GQA broadcast over dims 2 and 3, strided
// activations (transposed, permuted, sliced), permuted weight planes, and an output
// projection tall enough to be dequantized in several chunks.
// attention: decode (1 to 8 query rows per KV head: the decode kernel) and prompts (the
// flash kernel), GQA and multi-query, F16 and F32 K/V, head sizes 8 to 256 (padded ones
// too), causal masks with holes and a token that sees nothing, no mask, ALiBi, caches long
// enough to be split over blocks (and merged by the reduce kernel), permuted and padded
// cache views.
//
// NMSE allowed, GPU against CPU, and why:
//   F32 weights; F16/BF16 weights     1e-10  F32 products of the same values, summed in another
//     with <= 8 columns                      order (warp lanes, cuBLAS tiles; no TF32)
//   F16 weights, >= 9 columns         1e-6   cuBLAS multiplies activations rounded to F16 (the CPU
//                                            keeps them F32): ~(2^-11)^2 / 3 of relative noise
//   BF16 weights, >= 9 columns        5e-5   the same, rounded to BF16: ~(2^-8)^2 / 3
//   quantized weights, any columns    2e-4   the GPU quantizes activations to 8 bits per 32 (F32
//                                            scale) or, past 8 columns, keeps them F16 with F16
//                                            weights; the CPU quantizes them to the partner type
//                                            (Q8_0/Q8_1 per 32 with an F16 scale, Q8_K per 256).
//                                            Two independent roundings of ±max|x|/254 on uniform
//                                            activations: ~3e-5; a wrong block layout gives ~1
//   attention                         1e-8   F32 on both sides (F16 K/V converted exactly); exp
//                                            within ulps, sums in another order, splits merged
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ops/cuda_op_test_util.h"

namespace tessera::test {
namespace {

constexpr Layout kC = Layout::Contiguous;
constexpr Layout kT = Layout::Transposed;
constexpr Layout kP = Layout::Permuted;
constexpr Layout kS = Layout::Sliced;
constexpr DType F32 = DType::F32;
constexpr DType F16 = DType::F16;
constexpr DType BF16 = DType::BF16;

constexpr int64_t kVecCols = 8;  // mul_mat_plan.h: kMaxVecCols

double mul_mat_threshold(DType w, int64_t n_cols) {
  if (w == F32 || ((w == F16 || w == BF16) && n_cols <= kVecCols)) return 1e-10;
  if (w == F16) return 1e-6;
  if (w == BF16) return 5e-5;
  return 2e-4;
}

constexpr double kAttention = 1e-8;

// ---- mul_mat ---------------------------------------------------------------------------------

struct MulMatCase {
  DType type;
  int64_t k, m, n;                         // a: [k, m, a2, a3], b: [k, n, b2, b3]
  int64_t a2 = 1, a3 = 1, b2 = 1, b3 = 1;  // b2 % a2 == 0, b3 % a3 == 0
  Layout lb = kC;
  bool permuted_a = false;  // a is permute(0, 2, 1, 3) of a [k, a2, m, a3] leaf
};

std::ostream& operator<<(std::ostream& os, const MulMatCase& c) {
  return os << dtype_name(c.type) << " k " << c.k << " m " << c.m << " n " << c.n << " a " << c.a2 << "x" << c.a3
            << " b " << c.b2 << "x" << c.b3 << " b " << layout_name(c.lb) << (c.permuted_a ? " a permuted" : "");
}

const DType kWeightTypes[] = {F32,         F16,         BF16,        DType::Q4_0, DType::Q4_1,
                              DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q8_1, DType::Q2_K,
                              DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K};

// Every weight type times 1, 2, 8 (vector kernels), 9, 64 and 67 (GEMM) columns, then the
// shapes and layouts that take other branches.
std::vector<MulMatCase> mul_mat_cases() {
  std::vector<MulMatCase> cases;
  for (DType t : kWeightTypes) {
    const int64_t bs = dtype_traits(t).block_size;
    const int64_t k = bs >= 256 ? 512 : (bs == 32 ? 160 : 77);
    for (int64_t n : {1, 2, 8, 9, 64, 67}) cases.push_back({t, k, 37, n});
  }
  const std::vector<MulMatCase> more = {
      // Long rows: a decode step of a 7B model's projections.
      {DType::Q4_0, 4096, 9, 1},
      {DType::Q4_K, 4096, 5, 1},
      {DType::Q6_K, 11008, 3, 2},
      {F16, 4096, 11, 1},
      {F16, 4096, 11, 128},
      // GQA: activation planes sharing a weight plane, over dim 2 and dim 3, both paths.
      {DType::Q8_0, 64, 5, 3, 2, 1, 8, 1},
      {DType::Q3_K, 256, 3, 9, 2, 1, 4, 2},
      {DType::Q5_1, 32, 4, 12, 1, 2, 3, 4},
      {F16, 64, 5, 9, 2, 1, 8, 1},
      {F32, 64, 5, 2, 1, 2, 3, 4},
      {F32, 64, 5, 9, 3, 1, 3, 1},
      // Strided activations: read in place by the vector kernels, packed for cuBLAS.
      {DType::Q4_0, 64, 5, 7, 1, 1, 1, 1, kT},
      {DType::Q2_K, 256, 4, 3, 2, 1, 4, 1, kP},
      {DType::Q6_K, 256, 6, 65, 2, 1, 4, 1, kS},
      {F32, 96, 7, 9, 1, 1, 1, 1, kT},
      {F16, 96, 7, 3, 1, 1, 1, 1, kP},
      {BF16, 96, 7, 70, 1, 1, 1, 1, kS},
      // Weight planes out of order (rows dense), as attention's K^T Q reads a cache.
      {DType::Q4_1, 64, 5, 3, 3, 1, 3, 1, kC, true},
      {DType::Q4_K, 256, 3, 66, 2, 1, 4, 1, kP, true},
      {F16, 64, 5, 9, 3, 1, 3, 1, kC, true},
      {F32, 64, 5, 1, 3, 1, 6, 1, kC, true},
  };
  cases.insert(cases.end(), more.begin(), more.end());
  return cases;
}

class CudaMulMat : public ::testing::TestWithParam<MulMatCase> {};

TEST_P(CudaMulMat, MatchesCpu) {
  TESSERA_REQUIRE_CUDA();
  const MulMatCase& c = GetParam();
  CudaOpCase t(61);
  Tensor* a = c.permuted_a ? t.input(c.type, {c.k, c.m, c.a2, c.a3}, kP) : t.input(c.type, {c.k, c.m, c.a2, c.a3});
  Tensor* b = t.input(F32, {c.k, c.n, c.b2, c.b3}, c.lb);
  t.expect_match(ops::mul_mat(t.graph(), a, b), mul_mat_threshold(c.type, c.n));
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaMulMat, ::testing::ValuesIn(mul_mat_cases()));

// An output projection of more rows than one chunk of F16 weights holds
// (mul_mat_plan.h: dequant_chunk_rows), so the GEMM path runs once per chunk.
TEST(CudaMulMatChunks, OutputProjectionInSeveralChunks) {
  TESSERA_REQUIRE_CUDA();
  constexpr int64_t k = 1024;
  const int64_t chunk = int64_t(size_t(64) << 20) / (2 * k);  // rows of one chunk
  CudaOpCase t(62);
  Tensor* a = t.input(DType::Q4_0, {k, chunk + 77, 1, 1});
  Tensor* b = t.input(F32, {k, 9, 1, 1});
  t.expect_match(ops::mul_mat(t.graph(), a, b), mul_mat_threshold(DType::Q4_0, 9));
}

// ---- attention ---------------------------------------------------------------------------------

struct AttnCase {
  int64_t hd, n_tokens, n_head, n_head_kv, n_kv;
  DType kv_type;
  bool mask = true;
  Layout q_layout = kP;  // the model's q: a permuted view of [hd, n_head, n_tokens]
  Layout kv_layout = kC;
  float max_bias = 0.0f;  // ALiBi when > 0
};

std::ostream& operator<<(std::ostream& os, const AttnCase& c) {
  return os << "hd " << c.hd << " tokens " << c.n_tokens << " heads " << c.n_head << "/" << c.n_head_kv << " n_kv "
            << c.n_kv << " " << dtype_name(c.kv_type) << (c.mask ? "" : " no mask") << " q "
            << layout_name(c.q_layout) << " kv " << layout_name(c.kv_layout) << (c.max_bias > 0 ? " alibi" : "");
}

const AttnCase kAttnCases[] = {
    // Decode kernel: 1 to 8 query rows per KV head.
    {64, 1, 8, 2, 37, F16},                  // GQA 4
    {128, 1, 32, 8, 700, F32},               // two splits, merged
    {128, 1, 32, 4, 4100, F16, true, kP, kP},  // a long cache in 16 splits, permuted cache view
    {256, 1, 8, 1, 300, F16},                // multi-query, 8 rows, the largest heads
    {80, 1, 6, 3, 23, F32, false},           // head size padded to 128, no mask
    {64, 2, 8, 2, 50, F16},                  // 2 tokens x 4 heads: 8 rows
    {64, 3, 4, 2, 45, F32, true, kC, kS},    // 6 rows, the last token sees no cell (zeros)
    // Flash kernel: prompts.
    {8, 5, 8, 4, 40, F32},                   // stories260K's heads
    {80, 9, 6, 2, 23, F16},                  // head size padded to 128
    {128, 64, 8, 2, 64, F32},                // causal prompt, many row tiles
    {64, 33, 8, 2, 1000, F16},               // cells split over blocks, merged
    {256, 17, 4, 4, 70, F16, true, kC, kS},  // the largest heads, padded cache rows
    {16, 17, 3, 1, 50, F32, false},          // no mask
    {128, 512, 32, 8, 512, F16},             // a 512-token prompt of a 7B-like model
    // ALiBi: prompt and decode, head counts that are and are not powers of two.
    {64, 5, 8, 2, 40, F16, true, kP, kC, 8.0f},
    {64, 1, 8, 1, 33, F16, true, kP, kC, 8.0f},
    {32, 7, 12, 3, 37, F32, true, kC, kC, 8.0f},
};

// Cell c visible to token t: causal over positions (the tokens are the last n_tokens
// positions), with holes; the last token of a case of more than two tokens sees none.
bool visible(const AttnCase& c, int64_t t, int64_t cell) {
  if (c.n_tokens > 2 && t == c.n_tokens - 1) return false;
  if ((cell * 7 + t * 3) % 11 == 0 && cell > 0) return false;
  return cell <= c.n_kv - c.n_tokens + t;
}

class CudaAttention : public ::testing::TestWithParam<AttnCase> {};

TEST_P(CudaAttention, MatchesCpu) {
  TESSERA_REQUIRE_CUDA();
  const AttnCase& c = GetParam();
  CudaOpCase t(53);
  Tensor* q = t.input(F32, {c.hd, c.n_tokens, c.n_head, 1}, c.q_layout);
  Tensor* k = t.input(c.kv_type, {c.hd, c.n_kv, c.n_head_kv, 1}, c.kv_layout);
  Tensor* v = t.input(c.kv_type, {c.hd, c.n_kv, c.n_head_kv, 1}, c.kv_layout);
  Tensor* mask = nullptr;
  if (c.mask) {  // three rows to spare, as a padded mask has
    std::vector<float> m;
    for (int64_t tok = 0; tok < c.n_tokens + 3; ++tok) {
      const int64_t pos = c.n_kv - c.n_tokens + tok;
      for (int64_t cell = 0; cell < c.n_kv; ++cell) {
        const float bias = c.max_bias > 0 ? -float(pos - cell) : 0.0f;
        const bool seen = tok < c.n_tokens && visible(c, tok, cell);
        m.push_back(seen ? bias : -std::numeric_limits<float>::infinity());
      }
    }
    mask = t.input_values(F32, {c.n_kv, c.n_tokens + 3, 1, 1}, m);
  }
  const float scale = 1.0f / std::sqrt(float(c.hd));
  t.expect_match(ops::attention(t.graph(), q, k, v, mask, scale, c.max_bias), kAttention);
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaAttention, ::testing::ValuesIn(kAttnCases));

}  // namespace
}  // namespace tessera::test
