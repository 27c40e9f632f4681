// The quantized kernels of every vector level against the reference of src/quant:
//  - each weight type's dot with its partner, on 1..8 blocks and rows of 4096 and 11008
//    elements, for weights quantized from floats, weights of random bytes (every bit
//    pattern of the quants and sub-block scales) and extreme weights and activations
//    (the largest integer sums, where int16 saturation would show). The integer parts
//    are exact, so results agree to 1e-5 of the magnitude of the terms summed (each
//    element's scale and min terms times |y|; quant_test_util.h), which allows for the
//    order of float operations only.
//  - the partner quantizers (Q8_0, Q8_1, Q8_K) write bit-identical blocks, including on
//    rounding ties, zero blocks, ties for the largest magnitude and tiny values.
//  - the row conversions of the KV cache's formats give the reference dequantizers'
//    bits, on random bytes (every quant and fifth-bit pattern) and quantized floats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/quant_kernels.h"
#include "core/fp16.h"
#include "ops/quant_test_util.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace tessera::cpu {
namespace {

using test::can_quantize;
using test::fp16_fields;
using test::quantize_row;
using test::set_iq1_m_scale;
using test::term_magnitude;

using quant::QK_K;

constexpr DType kWeightTypes[] = {DType::Q4_0,    DType::Q4_1,    DType::Q5_0,   DType::Q5_1,
                                  DType::Q8_0,    DType::Q2_K,    DType::Q3_K,   DType::Q4_K,
                                  DType::Q5_K,    DType::Q6_K,    DType::IQ2_XXS, DType::IQ2_XS,
                                  DType::IQ2_S,   DType::IQ3_XXS, DType::IQ3_S,  DType::IQ1_S,
                                  DType::IQ1_M,   DType::IQ4_NL,  DType::IQ4_XS,
                                  DType::TQ1_0,   DType::TQ2_0};
constexpr Isa kFastIsas[] = {Isa::Avx2, Isa::Avx512};

int64_t block_size(DType t) { return dtype_traits(t).block_size; }
size_t block_bytes(DType t) { return dtype_traits(t).type_size; }

// Row lengths: 1..8 blocks, 4096 and 11008 (an FFN width; a multiple of 256).
std::vector<int64_t> lengths(DType t) {
  std::vector<int64_t> n;
  for (int64_t b = 1; b <= 8; ++b) n.push_back(b * block_size(t));
  n.push_back(4096);
  n.push_back(11008);
  return n;
}

std::vector<float> random_floats(int64_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  // A few outliers, as activations have.
  for (size_t i = 0; i < v.size(); i += 97) v[i] *= 8.0f;
  return v;
}

std::vector<uint8_t> quantize_ref(DType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(dtype_row_size(t, int64_t(x.size())));
  quant::format(t)->quantize(x.data(), q.data(), int64_t(x.size()));
  return q;
}

// Weight blocks of `fill` bytes (random when fill < 0) with finite random fp16 scales.
std::vector<uint8_t> weight_bytes(DType t, int64_t n, int fill, std::mt19937& rng) {
  std::vector<uint8_t> q(dtype_row_size(t, n));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (uint8_t& b : q) b = uint8_t(fill < 0 ? byte(rng) : fill);
  for (size_t off = 0; off < q.size(); off += block_bytes(t)) {
    for (size_t field : fp16_fields(t)) {
      const uint16_t h = f32_to_f16(scale(rng));
      std::memcpy(q.data() + off + field, &h, 2);
    }
    if (t == DType::IQ1_M) set_iq1_m_scale(q.data() + off, f32_to_f16(scale(rng)));
  }
  return q;
}

// Partner blocks whose quants are all `v` or -v (sign per element at random) with
// matching Q8_1 sums and Q8_K bsums: the largest integer sums a dot can see.
std::vector<uint8_t> extreme_partner(DType partner, int64_t n, int v, std::mt19937& rng) {
  std::vector<uint8_t> q(dtype_row_size(partner, n));
  std::bernoulli_distribution neg(0.5);
  if (partner == DType::Q8_K) {
    auto* b = reinterpret_cast<quant::BlockQ8_K*>(q.data());
    for (int64_t i = 0; i < n / QK_K; ++i) {
      b[i].d = 0.01f;
      for (int j = 0; j < QK_K; ++j) b[i].qs[j] = int8_t(neg(rng) ? -v : v);
      for (int g = 0; g < QK_K / 16; ++g) {
        int sum = 0;
        for (int l = 0; l < 16; ++l) sum += b[i].qs[16 * g + l];
        b[i].bsums[g] = int16_t(sum);
      }
    }
  } else {
    // Q8_0 and Q8_1 share the layout of d and qs (Q8_1's s is never read by a dot).
    const size_t bb = block_bytes(partner);
    const size_t qs =
        partner == DType::Q8_0 ? offsetof(quant::BlockQ8_0, qs) : offsetof(quant::BlockQ8_1, qs);
    for (size_t off = 0; off < q.size(); off += bb) {
      const uint16_t d = f32_to_f16(0.01f);
      std::memcpy(q.data() + off, &d, 2);
      for (int j = 0; j < 32; ++j) q[off + qs + size_t(j)] = uint8_t(int8_t(neg(rng) ? -v : v));
    }
  }
  return q;
}

struct DotCase {
  DType type;
  Isa isa;
};

std::string case_name(const ::testing::TestParamInfo<DotCase>& info) {
  return std::string(dtype_name(info.param.type)) + "_" + std::string(isa_name(info.param.isa));
}

class QuantDotTest : public ::testing::TestWithParam<DotCase> {
 protected:
  void SetUp() override {
    fast_ = quant_kernels_for(GetParam().isa);
    if (!fast_) GTEST_SKIP() << isa_name(GetParam().isa) << " not supported by this CPU";
  }

  // Compares the fast dot with the reference on x . y.
  void expect_dot(const std::vector<uint8_t>& x, const std::vector<uint8_t>& y, int64_t n,
                  const std::string& what) {
    const DType t = GetParam().type;
    const QuantMatmul fast = quant_matmul(*fast_, t);
    ASSERT_TRUE(fast);
    const float want = quant::format(t)->vec_dot(n, x.data(), y.data());
    const float got = fast.dot(n, x.data(), y.data());
    const double allowed = 1e-5 * term_magnitude(t, x.data(), y.data(), n) + 1e-30;
    EXPECT_LE(std::fabs(double(got) - double(want)), allowed)
        << what << ", n " << n << ": got " << got << ", want " << want;
    ++checked_;
  }

  const QuantKernels* fast_ = nullptr;
  int checked_ = 0;
};

TEST_P(QuantDotTest, PartnerMatchesTable) {
  const quant::Format* f = quant::format(GetParam().type);
  ASSERT_NE(f, nullptr);
  const QuantMatmul mm = quant_matmul(*fast_, GetParam().type);
  EXPECT_EQ(mm.partner, f->dot_partner);
  const QuantMatmul ref = quant_matmul(reference::kQuantKernels, GetParam().type);
  EXPECT_EQ(ref.dot, f->vec_dot);
  EXPECT_EQ(ref.quantize, quant::format(f->dot_partner)->quantize);
}

TEST_P(QuantDotTest, MatchesReferenceOnQuantizedFloats) {
  const DType t = GetParam().type;
  if (!can_quantize(t)) GTEST_SKIP() << dtype_name(t) << " has no quantizer (random bytes below)";
  const DType partner = quant::format(t)->dot_partner;
  std::mt19937 rng(uint32_t(t) * 7919u + 1);
  for (int64_t n : lengths(t)) {
    const std::vector<uint8_t> x = quantize_row(t, random_floats(n, rng, 0.02f));
    const std::vector<uint8_t> y = quantize_ref(partner, random_floats(n, rng));
    expect_dot(x, y, n, "quantized floats");
  }
  EXPECT_EQ(checked_, 10);
}

TEST_P(QuantDotTest, MatchesReferenceOnRandomBytes) {
  const DType t = GetParam().type;
  const DType partner = quant::format(t)->dot_partner;
  std::mt19937 rng(uint32_t(t) * 104729u + 3);
  for (int64_t n : lengths(t)) {
    for (int rep = 0; rep < 3; ++rep) {
      const std::vector<uint8_t> x = weight_bytes(t, n, -1, rng);
      const std::vector<uint8_t> y = quantize_ref(partner, random_floats(n, rng));
      expect_dot(x, y, n, "random weight bytes");
    }
  }
}

TEST_P(QuantDotTest, MatchesReferenceOnExtremes) {
  const DType t = GetParam().type;
  const DType partner = quant::format(t)->dot_partner;
  std::mt19937 rng(uint32_t(t) + 11);
  for (int64_t n : {block_size(t), 8 * block_size(t), int64_t(4096)}) {
    for (int fill : {0x00, 0xff, 0x80, 0x7f, 0x55, 0xaa}) {
      const std::vector<uint8_t> x = weight_bytes(t, n, fill, rng);
      for (int v : {127, 1, 0}) {
        expect_dot(
            x, extreme_partner(partner, n, v, rng), n,
            "weight bytes " + std::to_string(fill) + ", partner quants +-" + std::to_string(v));
      }
      expect_dot(x, quantize_ref(partner, random_floats(n, rng)), n,
                 "weight bytes " + std::to_string(fill));
    }
  }
}

// Zero-length rows give exactly 0.
TEST_P(QuantDotTest, EmptyRow) {
  const QuantMatmul mm = quant_matmul(*fast_, GetParam().type);
  uint8_t dummy[512] = {};
  EXPECT_EQ(mm.dot(0, dummy, dummy), 0.0f);
}

std::vector<DotCase> dot_cases() {
  std::vector<DotCase> c;
  for (DType t : kWeightTypes) {
    for (Isa isa : kFastIsas) c.push_back({t, isa});
  }
  return c;
}

INSTANTIATE_TEST_SUITE_P(Types, QuantDotTest, ::testing::ValuesIn(dot_cases()), case_name);

// ---- partner quantizers ---------------------------------------------------------------

struct PartnerCase {
  DType partner;
  Isa isa;
};

std::string partner_name(const ::testing::TestParamInfo<PartnerCase>& info) {
  return std::string(dtype_name(info.param.partner)) + "_" + std::string(isa_name(info.param.isa));
}

QuantizeRowFn partner_quantizer(const QuantKernels& k, DType partner) {
  switch (partner) {
    case DType::Q8_0:
      return k.quantize_q8_0;
    case DType::Q8_1:
      return k.quantize_q8_1;
    default:
      return k.quantize_q8_K;
  }
}

class PartnerQuantizeTest : public ::testing::TestWithParam<PartnerCase> {
 protected:
  void expect_identical(const std::vector<float>& x, const std::string& what) {
    const DType partner = GetParam().partner;
    const QuantKernels* fast = quant_kernels_for(GetParam().isa);
    ASSERT_NE(fast, nullptr);
    const int64_t n = int64_t(x.size());
    const std::vector<uint8_t> want = quantize_ref(partner, x);
    std::vector<uint8_t> got(want.size(), 0xcd);
    partner_quantizer(*fast, partner)(x.data(), got.data(), n);
    const size_t bb = block_bytes(partner);
    for (size_t off = 0; off < want.size(); off += bb) {
      if (std::memcmp(want.data() + off, got.data() + off, bb) != 0) {
        ADD_FAILURE() << what << ", n " << n << ": block " << off / bb << " differs";
        return;
      }
    }
  }
};

TEST_P(PartnerQuantizeTest, BitIdenticalToReference) {
  if (!quant_kernels_for(GetParam().isa)) GTEST_SKIP() << "ISA not supported by this CPU";
  const DType partner = GetParam().partner;
  const int64_t bs = block_size(partner);
  std::mt19937 rng(uint32_t(partner) + 5);
  std::vector<int64_t> ns;
  for (int64_t b = 1; b <= 8; ++b) ns.push_back(b * bs);
  ns.push_back(4096);
  ns.push_back(11008);
  for (int64_t n : ns) {
    expect_identical(random_floats(n, rng), "gaussian");
    expect_identical(random_floats(n, rng, 1e-30f), "tiny");
    std::uniform_real_distribution<float> uni(-1000.0f, 1000.0f);
    std::vector<float> u(static_cast<size_t>(n));
    for (float& v : u) v = uni(rng);
    expect_identical(u, "uniform");
  }
}

// Values on rounding ties, blocks of zeros, one non-zero value, the largest magnitude
// present with both signs, and a block whose largest value sits last.
TEST_P(PartnerQuantizeTest, BitIdenticalOnEdgeCases) {
  if (!quant_kernels_for(GetParam().isa)) GTEST_SKIP() << "ISA not supported by this CPU";
  const DType partner = GetParam().partner;
  const int64_t n = 4 * block_size(partner);
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> k(-254, 254);
  // Scale 1 after quantization: max 127 (Q8_0/Q8_1: d = 1) and -127 (Q8_K: d = 1), so
  // x / d lands exactly on the halves.
  for (float top : {127.0f, -127.0f}) {
    std::vector<float> ties(static_cast<size_t>(n));
    for (float& v : ties) v = float(k(rng)) * 0.5f;
    for (int64_t b = 0; b < n; b += block_size(partner)) ties[size_t(b) + 3] = top;
    expect_identical(ties, "ties");
  }
  std::vector<float> zeros(static_cast<size_t>(n), 0.0f);
  expect_identical(zeros, "zeros");
  zeros[size_t(n) - 1] = -3.0f;
  expect_identical(zeros, "one value");
  std::vector<float> both = random_floats(n, rng);
  for (int64_t b = 0; b < n; b += block_size(partner)) {
    both[size_t(b) + 1] = 50.0f;
    both[size_t(b) + 7] = -50.0f;
  }
  expect_identical(both, "largest magnitude with both signs");
  for (float& v : both) v = -v;
  expect_identical(both, "largest magnitude with both signs, negated");
  std::vector<float> last = random_floats(n, rng);
  for (int64_t b = 0; b < n; b += block_size(partner))
    last[size_t(b + block_size(partner)) - 1] = -9.0f;
  expect_identical(last, "largest last");
  std::vector<float> signed_zero(static_cast<size_t>(n), -0.0f);
  expect_identical(signed_zero, "negative zeros");
}

std::vector<PartnerCase> partner_cases() {
  std::vector<PartnerCase> c;
  for (DType p : {DType::Q8_0, DType::Q8_1, DType::Q8_K}) {
    for (Isa isa : kFastIsas) c.push_back({p, isa});
  }
  return c;
}

INSTANTIATE_TEST_SUITE_P(Partners, PartnerQuantizeTest, ::testing::ValuesIn(partner_cases()),
                         partner_name);

// The KV cache's block formats: the levels' row conversions against src/quant's.
constexpr DType kCacheTypes[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::IQ4_NL};

TEST(QuantToFloatTest, BitIdenticalToReferenceOnEveryLevel) {
  std::mt19937 rng(17);
  for (DType t : kCacheTypes) {
    EXPECT_EQ(quant_to_float(reference::kQuantKernels, t), quant::format(t)->dequantize) << dtype_name(t);
    for (Isa isa : kFastIsas) {
      const QuantKernels* k = quant_kernels_for(isa);
      if (!k) continue;
      const ToFloatRowFn fast = quant_to_float(*k, t);
      ASSERT_NE(fast, nullptr) << dtype_name(t) << " " << isa_name(isa);
      for (int64_t n : lengths(t)) {
        for (int kind = 0; kind < 2; ++kind) {
          const std::vector<uint8_t> x = kind == 0 ? weight_bytes(t, n, -1, rng) : quantize_ref(t, random_floats(n, rng));
          std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n), -1.0f);
          quant::format(t)->dequantize(x.data(), want.data(), n);
          fast(x.data(), got.data(), n);
          ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
              << dtype_name(t) << " " << isa_name(isa) << ", n " << n << (kind == 0 ? ", random bytes" : ", quantized floats");
        }
      }
    }
  }
  EXPECT_EQ(quant_to_float(reference::kQuantKernels, DType::Q4_K), nullptr);
}

// The table of the active level is the one of the active vector level.
TEST(QuantKernelsTest, FollowsActiveLevel) {
  const Isa saved = active_isa();
  for (Isa isa : {Isa::Reference, Isa::Avx2, Isa::Avx512}) {
    if (!set_active_isa(isa)) {
      EXPECT_EQ(quant_kernels_for(isa), nullptr);
      continue;
    }
    EXPECT_EQ(quant_kernels().isa, isa);
    EXPECT_EQ(&quant_kernels(), quant_kernels_for(isa));
  }
  set_active_isa(saved);
  EXPECT_FALSE(quant_matmul(quant_kernels(), DType::F16));
  EXPECT_FALSE(quant_matmul(quant_kernels(), DType::Q8_K));
}

}  // namespace
}  // namespace tessera::cpu
