// The block decoding and 8-bit dot products of the CUDA get_rows and mul_mat kernels
// (src/backend/cuda/dequant.h, q8_dot.h), compiled for the host: every element decoded
// bit for bit as src/quant's reference dequantizers, and every weight type's dot pieces
// against the dequantized weights, on quantized data and on random block bytes. No GPU
// and no CUDA header needed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cuda/dequant.h"
#include "backend/cuda/q8_dot.h"
#include "core/fp16.h"
#include "tessera/dtype.h"
#include "quant/convert.h"

namespace tessera {
namespace {

namespace dq = cuda::dq;
namespace q8 = cuda::q8;

const DType kTypes[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                        DType::Q8_0, DType::Q8_1, DType::Q2_K, DType::Q3_K,
                        DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K};
constexpr int64_t kN = 512;  // two super-blocks

std::vector<float> random_floats(std::mt19937& rng, int64_t n) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float scale = (i / 32) % 3 == 0 ? 0.01f : ((i / 32) % 3 == 1 ? 1.0f : 40.0f);
    x[size_t(i)] = nd(rng) * scale;
  }
  x[7] = 0.0f;
  return x;
}

std::vector<uint8_t> quantized(DType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(dtype_row_size(t, int64_t(x.size())));
  quant::from_float_fn(t)(x.data(), q.data(), int64_t(x.size()));
  return q;
}

// Random bytes whose reference dequantization is finite and moderate (the fp16 scales
// drawn as random bits are sometimes infinite).
std::vector<uint8_t> random_blocks(DType t, std::mt19937& rng) {
  std::vector<uint8_t> q(dtype_row_size(t, kN));
  std::vector<float> y(static_cast<size_t>(kN));
  for (int tries = 0; tries < 1000; ++tries) {
    for (uint8_t& b : q) b = uint8_t(rng());
    quant::to_float_fn(t)(q.data(), y.data(), kN);
    bool ok = true;
    for (float v : y) ok = ok && std::isfinite(v) && std::fabs(v) < 1e6f;
    if (ok) return q;
  }
  ADD_FAILURE() << "no finite random row for " << dtype_name(t);
  return q;
}

float decode(DType t, const uint8_t* row, int64_t i) {
  float v = 0.0f;
  EXPECT_TRUE(dq::with_quant_type(t, [&]<DType T>() { v = dq::decode_row<T>(row, i); }));
  return v;
}

void expect_decodes_as_reference(DType t, const std::vector<uint8_t>& q) {
  std::vector<float> ref(static_cast<size_t>(kN));
  quant::to_float_fn(t)(q.data(), ref.data(), kN);
  for (int64_t i = 0; i < kN; ++i) {
    const float got = decode(t, q.data(), i);
    ASSERT_TRUE(f32_to_bits(got) == f32_to_bits(ref[size_t(i)]) ||
                (std::isnan(got) && std::isnan(ref[size_t(i)])))
        << dtype_name(t) << " element " << i << ": " << got << " vs " << ref[size_t(i)];
  }
}

TEST(CudaQuantMath, DecodeMatchesTheReferenceDequantizers) {
  std::mt19937 rng(1);
  for (DType t : kTypes) {
    ASSERT_TRUE(dq::has_decoder(t));
    expect_decodes_as_reference(t, quantized(t, random_floats(rng, kN)));
    for (int round = 0; round < 4; ++round) expect_decodes_as_reference(t, random_blocks(t, rng));
  }
  EXPECT_FALSE(dq::has_decoder(DType::IQ4_NL));
  EXPECT_FALSE(dq::has_decoder(DType::Q4_0_X16));
  EXPECT_FALSE(dq::has_decoder(DType::F16));
}

TEST(CudaQuantMath, BlockSizesAreTheTraits) {
  for (DType t : kTypes) {
    dq::with_quant_type(t, [&]<DType T>() {
      EXPECT_EQ(dq::kQK<T>, dtype_traits(t).block_size) << dtype_name(t);
      EXPECT_EQ(size_t(dq::kBlockBytes<T>), dtype_traits(t).type_size) << dtype_name(t);
    });
  }
}

// Activations as the CUDA quantize kernel makes them.
std::vector<q8::Q8Act> quantize_acts(const std::vector<float>& x) {
  std::vector<q8::Q8Act> out(x.size() / q8::kQK);
  for (size_t b = 0; b < out.size(); ++b) {
    float amax = 0.0f;
    for (int j = 0; j < q8::kQK; ++j) amax = std::fmax(amax, std::fabs(x[b * q8::kQK + size_t(j)]));
    const float d = q8::scale_of(amax);
    out[b].d = d;
    out[b].sum = 0;
    for (int j = 0; j < q8::kQK; ++j) {
      out[b].qs[j] = q8::quantize_one(x[b * q8::kQK + size_t(j)], q8::inverse(d));
      out[b].sum += out[b].qs[j];
    }
  }
  return out;
}

void expect_dot_matches(DType t, const std::vector<uint8_t>& w, const std::vector<q8::Q8Act>& a) {
  std::vector<float> wf(static_cast<size_t>(kN));
  quant::to_float_fn(t)(w.data(), wf.data(), kN);
  double ref = 0.0, mag = 0.0;
  for (int64_t i = 0; i < kN; ++i) {
    const q8::Q8Act& blk = a[size_t(i / q8::kQK)];
    const double term = double(wf[size_t(i)]) * double(blk.d) * double(blk.qs[i % q8::kQK]);
    ref += term;
    mag += std::fabs(term);
  }
  float got = 0.0f;
  dq::with_quant_type(t, [&]<DType T>() {
    constexpr int kPer = dq::kQK<T> / q8::kQK;
    for (int64_t p = 0; p < kN / q8::kQK; ++p) {
      got +=
          q8::dot_piece<T>(w.data() + (p / kPer) * dq::kBlockBytes<T>, int(p % kPer), a[size_t(p)]);
    }
  });
  EXPECT_NEAR(got, ref, 1e-5 * mag + 1e-6) << dtype_name(t);
}

TEST(CudaQuantMath, DotPiecesMatchTheDequantizedWeights) {
  std::mt19937 rng(2);
  for (DType t : kTypes) {
    const std::vector<q8::Q8Act> a = quantize_acts(random_floats(rng, kN));
    expect_dot_matches(t, quantized(t, random_floats(rng, kN)), a);
    for (int round = 0; round < 4; ++round) expect_dot_matches(t, random_blocks(t, rng), a);
  }
}

TEST(CudaQuantMath, Dp4aIsASignedByteDot) {
  EXPECT_EQ(q8::dp4a(int(0x7f80ff01u), int(0x02ff7f80u), 5),
            5 + 1 * -128 + -1 * 127 + -128 * -1 + 127 * 2);
  EXPECT_EQ(q8::spread4(0xf), 0x10101010);
  EXPECT_EQ(q8::spread4(0x5), 0x00100010);
}

}  // namespace
}  // namespace tessera
