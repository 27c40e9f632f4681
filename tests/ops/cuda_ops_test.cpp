// The CUDA op table's elementwise, norm, softmax, rope, copy and row ops, each run on
// CUDA device 0 and on the CPU backend from the same random inputs (cuda_op_test_util.h),
// with odd sizes, broadcasts and permuted / transposed / sliced inputs wherever the op
// takes them. mul_mat and attention: cuda_matmul_attention_test.cpp.
//
// NMSE allowed, GPU against CPU, and why:
//   add, mul, scale, relu_sqr,   0 (same bits)  one rounded IEEE operation per element on both
//     clamp, concat                             sides (or none)
//   silu, gelu                   1e-10          the GPU's expf/tanhf are within 2 ulp of the
//                                               host's; the CPU's vector levels approximate exp
//   rms_norm, norm               1e-10          the row sums are added in another order (a
//                                               block reduction against the CPU's lanes)
//   soft_max                     1e-10          expf within 2 ulp, sums in another order
//   rope (+ inverse)             1e-11          angles in double on both sides (sincos may differ
//                                               in the last double bit), products rounded as on
//                                               the CPU
//   get_rows, every type         0              dequant.h repeats the reference decoders' float
//                                               operations in their order, without FMA
//   cpy, cont, set_rows          0              conversions round to nearest even (core/fp16.h),
//                                               Q8_0 is quantized as src/quant does
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "ops/cuda_op_test_util.h"

namespace tessera::test {
namespace {

constexpr double kExact = 0;
constexpr double kTranscendental = 1e-10;
constexpr double kReduction = 1e-10;
constexpr double kRope = 1e-11;

constexpr Layout kC = Layout::Contiguous;
constexpr Layout kT = Layout::Transposed;
constexpr Layout kP = Layout::Permuted;
constexpr Layout kS = Layout::Sliced;
constexpr DType F32 = DType::F32;
constexpr DType F16 = DType::F16;
constexpr DType BF16 = DType::BF16;

std::string shape_str(const Shape& ne) {
  std::ostringstream s;
  s << ne[0] << "x" << ne[1] << "x" << ne[2] << "x" << ne[3];
  return s.str();
}

// ---- add, mul (b broadcast) ---------------------------------------------------------------

struct BinaryCase {
  Shape a, b;
  Layout la = kC, lb = kC;
};

std::ostream& operator<<(std::ostream& os, const BinaryCase& c) {
  return os << "a " << shape_str(c.a) << " " << layout_name(c.la) << ", b " << shape_str(c.b) << " "
            << layout_name(c.lb);
}

const BinaryCase kBinaryCases[] = {
    {{1, 1, 1, 1}, {1, 1, 1, 1}},
    {{37, 5, 3, 2}, {37, 5, 3, 2}},
    {{4097, 3, 1, 1}, {4097, 1, 1, 1}},  // a row broadcast (a norm's weight)
    {{64, 6, 2, 2}, {1, 6, 1, 2}},       // one value per row, broadcast over dims 0 and 2
    {{30, 4, 3, 1}, {10, 4, 1, 1}},      // dim 0 repeated three times
    {{33, 9, 2, 1}, {33, 9, 2, 1}, kT, kC},
    {{33, 9, 2, 1}, {33, 9, 1, 1}, kC, kT},
    {{19, 5, 4, 1}, {19, 5, 4, 1}, kP, kS},
    {{19, 5, 3, 2}, {19, 5, 1, 1}, kS, kP},
};

class CudaBinary : public ::testing::TestWithParam<BinaryCase> {
 protected:
  void check(Tensor* (*build)(Graph&, Tensor*, Tensor*)) {
    const BinaryCase& c = GetParam();
    CudaOpCase t(11);
    Tensor* a = t.input(F32, c.a, c.la, -2, 2);
    Tensor* b = t.input(F32, c.b, c.lb, -2, 2);
    t.expect_match(build(t.graph(), a, b), kExact);
  }
};

TEST_P(CudaBinary, Add) {
  TESSERA_REQUIRE_CUDA();
  check(ops::add);
}
TEST_P(CudaBinary, Mul) {
  TESSERA_REQUIRE_CUDA();
  check(ops::mul);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaBinary, ::testing::ValuesIn(kBinaryCases));

// ---- scale, silu, gelu, relu_sqr, clamp; rms_norm, norm ---------------------------------------

struct RowsCase {
  Shape ne;
  Layout layout = kC;
};

std::ostream& operator<<(std::ostream& os, const RowsCase& c) {
  return os << shape_str(c.ne) << " " << layout_name(c.layout);
}

const RowsCase kRowsCases[] = {
    {{1, 1, 1, 1}},        {{3, 1, 1, 1}},         {{255, 5, 1, 1}},      {{4097, 3, 1, 1}},
    {{16, 7, 3, 2}},       {{21, 6, 1, 1}, kT},    {{18, 4, 3, 1}, kP},   {{255, 3, 2, 1}, kS},
};

class CudaRows : public ::testing::TestWithParam<RowsCase> {
 protected:
  template <typename B>
  void check(B build, double max_nmse, float lo = -3, float hi = 3) {
    CudaOpCase t(12);
    Tensor* a = t.input(F32, GetParam().ne, GetParam().layout, lo, hi);
    t.expect_match(build(t.graph(), a), max_nmse);
  }
};

TEST_P(CudaRows, Scale) {
  TESSERA_REQUIRE_CUDA();
  check([](Graph& g, Tensor* a) { return ops::scale(g, a, -0.731f); }, kExact);
}
TEST_P(CudaRows, Silu) {
  TESSERA_REQUIRE_CUDA();
  check([](Graph& g, Tensor* a) { return ops::silu(g, a); }, kTranscendental, -12, 12);
}
TEST_P(CudaRows, Gelu) {
  TESSERA_REQUIRE_CUDA();
  check([](Graph& g, Tensor* a) { return ops::gelu(g, a); }, kTranscendental, -6, 6);
}
TEST_P(CudaRows, ReluSqr) {
  TESSERA_REQUIRE_CUDA();
  check([](Graph& g, Tensor* a) { return ops::relu_sqr(g, a); }, kExact);
}
TEST_P(CudaRows, Clamp) {
  TESSERA_REQUIRE_CUDA();
  check([](Graph& g, Tensor* a) { return ops::clamp(g, a, -1.25f, 0.5f); }, kExact);
}
TEST_P(CudaRows, RmsNorm) {
  TESSERA_REQUIRE_CUDA();
  check([](Graph& g, Tensor* a) { return ops::rms_norm(g, a, 1e-5f); }, kReduction, -2, 3);
}
TEST_P(CudaRows, Norm) {
  TESSERA_REQUIRE_CUDA();
  check([](Graph& g, Tensor* a) { return ops::norm(g, a, 1e-5f); }, kReduction, -2, 3);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaRows, ::testing::ValuesIn(kRowsCases));

TEST(CudaConcat, EveryDimAndStridedInputs) {
  TESSERA_REQUIRE_CUDA();
  for (int dim = 0; dim < 4; ++dim) {
    for (Layout l : {kC, kP}) {
      SCOPED_TRACE("dim " + std::to_string(dim) + ", " + layout_name(l));
      Shape na{13, 5, 3, 2}, nb = na;
      nb[size_t(dim)] = 4;
      CudaOpCase t(13);
      Tensor* a = t.input(F32, na, l);
      Tensor* b = t.input(F32, nb, kS);
      t.expect_match(ops::concat(t.graph(), a, b, dim), kExact);
    }
  }
}

// ---- soft_max --------------------------------------------------------------------------------

struct SoftMaxCase {
  Shape ne;
  Layout layout = kC;
  bool mask = false;  // causal -inf, row 0 masked entirely (zeros), two rows to spare
  float scale = 1.0f;
};

std::ostream& operator<<(std::ostream& os, const SoftMaxCase& c) {
  return os << shape_str(c.ne) << " " << layout_name(c.layout) << (c.mask ? " mask" : "") << " scale "
            << c.scale;
}

const SoftMaxCase kSoftMaxCases[] = {
    {{1, 1, 1, 1}},
    {{17, 5, 2, 1}, kC, true, 0.125f},
    {{4097, 3, 1, 1}, kC, false, 2.0f},
    {{4097, 3, 2, 1}, kC, true, 0.25f},
    {{37, 7, 4, 2}, kC, true, 0.3f},  // attention scores [n_kv, n_tokens, n_head]
    {{24, 9, 1, 1}, kT, true},
    {{40, 5, 3, 1}, kP, true},
    {{65, 4, 2, 1}, kS, false, 0.7f},
};

class CudaSoftMax : public ::testing::TestWithParam<SoftMaxCase> {};

TEST_P(CudaSoftMax, MatchesCpu) {
  TESSERA_REQUIRE_CUDA();
  const SoftMaxCase& c = GetParam();
  CudaOpCase t(23);
  Tensor* a = t.input(F32, c.ne, c.layout, -4, 4);
  Tensor* mask = nullptr;
  if (c.mask) {
    std::vector<float> v;
    for (int64_t i = 0; i < c.ne[1] + 2; ++i) {
      for (int64_t j = 0; j < c.ne[0]; ++j) {
        const bool masked = i == 0 || j > i + c.ne[0] - c.ne[1];
        v.push_back(masked ? -std::numeric_limits<float>::infinity() : -0.01f * float((i + j) % 7));
      }
    }
    mask = t.input_values(F32, {c.ne[0], c.ne[1] + 2, 1, 1}, v);
  }
  t.expect_match(ops::soft_max(t.graph(), a, mask, c.scale), kReduction);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaSoftMax, ::testing::ValuesIn(kSoftMaxCases));

// ---- rope ------------------------------------------------------------------------------------

struct RopeCase {
  int64_t head_dim, n_head, n_tokens;
  int n_dims;  // < head_dim: partial rotation
  RopeMode mode;
  float freq_base = 10000.0f, freq_scale = 1.0f;
  Layout layout = kC;
  bool factors = false;  // per-pair frequency divisors (Llama 3's rope_freqs)
  bool inverse = false;  // rope_back
};

std::ostream& operator<<(std::ostream& os, const RopeCase& c) {
  return os << "hd " << c.head_dim << " heads " << c.n_head << " tokens " << c.n_tokens << " n_dims "
            << c.n_dims << (c.mode == RopeMode::NeoX ? " neox " : " normal ") << layout_name(c.layout)
            << (c.factors ? " factors" : "") << (c.inverse ? " inverse" : "");
}

const RopeCase kRopeCases[] = {
    {64, 4, 5, 64, RopeMode::Normal},
    {64, 4, 5, 64, RopeMode::NeoX},
    {64, 3, 7, 32, RopeMode::Normal},  // partial
    {66, 3, 7, 32, RopeMode::NeoX},    // partial, odd pass-through
    {80, 5, 3, 20, RopeMode::NeoX, 500000.0f, 0.25f},
    {128, 40, 9, 128, RopeMode::Normal, 1000000.0f},  // more heads than one block rotates
    {8, 8, 33, 8, RopeMode::Normal},                  // stories260K's heads
    {18, 7, 4, 10, RopeMode::Normal, 10000.0f, 0.5f, kS},
    {32, 6, 3, 16, RopeMode::NeoX, 10000.0f, 1.0f, kP},
    {16, 5, 3, 12, RopeMode::Normal, 10000.0f, 1.0f, kT},
    {32, 4, 6, 32, RopeMode::Normal, 500000.0f, 1.0f, kC, true},
    {64, 3, 5, 32, RopeMode::NeoX, 25000.0f, 1.0f, kS, true, true},
    {128, 2, 4, 128, RopeMode::Normal, 10000.0f, 1.0f, kC, false, true},
};

class CudaRope : public ::testing::TestWithParam<RopeCase> {};

TEST_P(CudaRope, MatchesCpu) {
  TESSERA_REQUIRE_CUDA();
  const RopeCase& c = GetParam();
  CudaOpCase t(31);
  Tensor* a = t.input(F32, {c.head_dim, c.n_head, c.n_tokens, 1}, c.layout);
  std::vector<int32_t> pos;
  for (int64_t i = 0; i < c.n_tokens; ++i) pos.push_back(int32_t(i == 0 ? 0 : 3 + 397 * i));
  std::vector<float> factors;
  for (int i = 0; i < c.n_dims / 2; ++i) factors.push_back(0.5f * std::pow(16.0f, float(i) / float(c.n_dims / 2)));
  Tensor* f = c.factors ? t.input_values(F32, {c.n_dims / 2, 1, 1, 1}, factors) : nullptr;
  Tensor* p = t.ids(pos);
  Tensor* out = c.inverse ? ops::rope_back(t.graph(), a, p, c.n_dims, c.mode, c.freq_base, c.freq_scale, f)
                          : ops::rope(t.graph(), a, p, c.n_dims, c.mode, c.freq_base, c.freq_scale, f);
  t.expect_match(out, kRope);
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaRope, ::testing::ValuesIn(kRopeCases));

// ---- get_rows: every weight type the GPU decodes -------------------------------------------

const DType kRowTypes[] = {F32,         F16,         BF16,        DType::Q4_0, DType::Q4_1,
                           DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q8_1, DType::Q2_K,
                           DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K};

class CudaGetRows : public ::testing::TestWithParam<DType> {};

TEST_P(CudaGetRows, MatchesCpuBits) {
  TESSERA_REQUIRE_CUDA();
  const DType type = GetParam();
  const int64_t n_embd = dtype_traits(type).block_size >= 256 ? 512 : (type == F32 ? 77 : 96);
  CudaOpCase t(41);
  Tensor* table = t.input(type, {n_embd, 13, 1, 1}, -2, 2);  // [n_embd, n_vocab]
  Tensor* ids = t.ids({0, 12, 5, 5, 3, 11, 7});                // a repeat, the last row
  t.expect_match(ops::get_rows(t.graph(), table, ids), kExact);
}

INSTANTIATE_TEST_SUITE_P(Types, CudaGetRows, ::testing::ValuesIn(kRowTypes),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

// ---- cpy, cont, set_rows --------------------------------------------------------------------

struct CpyCase {
  DType src_type, dst_type;
  Shape src_ne, dst_ne;
  Layout src_layout = kC, dst_layout = kC;
};

std::ostream& operator<<(std::ostream& os, const CpyCase& c) {
  return os << dtype_name(c.src_type) << " " << layout_name(c.src_layout) << " " << shape_str(c.src_ne)
            << " -> " << dtype_name(c.dst_type) << " " << layout_name(c.dst_layout) << " "
            << shape_str(c.dst_ne);
}

const CpyCase kCpyCases[] = {
    {F32, F32, {17, 3, 1, 1}, {17, 3, 1, 1}},
    {F32, F16, {4097, 2, 1, 1}, {4097, 2, 1, 1}},
    {F32, BF16, {255, 3, 1, 1}, {255, 3, 1, 1}},
    {F16, F32, {33, 5, 1, 1}, {33, 5, 1, 1}},
    {BF16, F32, {33, 5, 1, 1}, {33, 5, 1, 1}},
    {F16, F16, {9, 4, 2, 1}, {9, 4, 2, 1}, kT, kC},
    {F32, F32, {6, 4, 2, 1}, {12, 4, 1, 1}},  // another shape
    {F32, F16, {5, 6, 1, 1}, {3, 10, 1, 1}, kT, kC},
    {F32, F16, {16, 7, 1, 1}, {16, 7, 1, 1}, kC, kT},  // into a transposed cache (V)
    {F32, F32, {20, 3, 4, 1}, {20, 3, 4, 1}, kP, kS},
    {F32, BF16, {13, 6, 1, 1}, {13, 6, 1, 1}, kS, kP},
    {F32, DType::Q8_0, {96, 5, 1, 1}, {96, 5, 1, 1}},
    {F16, DType::Q8_0, {64, 3, 2, 1}, {64, 3, 2, 1}, kP, kC},
    {DType::Q4_0, DType::Q4_0, {64, 5, 1, 1}, {64, 5, 1, 1}},  // rows of one quantized type
    {DType::Q6_K, DType::Q6_K, {256, 3, 2, 1}, {256, 3, 2, 1}, kP, kC},
};

class CudaCopy : public ::testing::TestWithParam<CpyCase> {};

TEST_P(CudaCopy, CpyMatchesCpuBits) {
  TESSERA_REQUIRE_CUDA();
  const CpyCase& c = GetParam();
  CudaOpCase t(51);
  Tensor* src = t.input(c.src_type, c.src_ne, c.src_layout, -3, 3);
  Tensor* dst = t.input(c.dst_type, c.dst_ne, c.dst_layout, -3, 3);
  t.expect_match(ops::cpy(t.graph(), src, dst), kExact);
}

TEST_P(CudaCopy, ContMatchesCpuBits) {
  TESSERA_REQUIRE_CUDA();
  const CpyCase& c = GetParam();
  if (dtype_traits(c.dst_type).block_size > 1 || dtype_traits(c.src_type).block_size > 1) {
    GTEST_SKIP() << "cont converts to float types only";
  }
  CudaOpCase t(52);
  Tensor* src = t.input(c.src_type, c.src_ne, c.src_layout, -3, 3);
  t.expect_match(ops::cont(t.graph(), src, c.dst_type), kExact);
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaCopy, ::testing::ValuesIn(kCpyCases));

class CudaSetRows : public ::testing::TestWithParam<DType> {};

// Rows written into a cache of each type the KV cache may have, one id twice (the last
// write wins), the source rows strided.
TEST_P(CudaSetRows, MatchesCpuBits) {
  TESSERA_REQUIRE_CUDA();
  CudaOpCase t(53);
  Tensor* cache = t.input(GetParam(), {64, 11, 1, 1}, -1, 1);
  Tensor* rows = t.input(F32, {64, 4, 1, 1}, kS, -3, 3);
  t.expect_match(ops::set_rows(t.graph(), cache, rows, t.ids({7, 0, 10, 7})), kExact);
}

INSTANTIATE_TEST_SUITE_P(Types, CudaSetRows, ::testing::Values(F32, F16, BF16, DType::Q8_0),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

}  // namespace
}  // namespace tessera::test
