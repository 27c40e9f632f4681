// The ternary formats TQ1_0 and TQ2_0 (src/quant/ternary.cpp) against their definition
// (blocks.h) written out independently here, and against the reference quantizer's files:
//  - every base-3 byte value (0..242) packs and reads back its five trits; every byte
//    value decodes to trits in {0, 1, 2};
//  - element order: a block with one non-zero element at each position in turn;
//  - quantize: t = round(x / max|x|), d = max|x| in fp16; zero blocks; both formats
//    store the same trits and scale, so they dequantize and dot to the same bits;
//  - the dot with Q8_K is the exact integer sum, checked against dequantize-then-multiply
//    in double;
//  - quantizing mini-llama-f16's weights reproduces the blocks of the reference
//    quantizer's mini-llama-TQ1_0/TQ2_0 files, all of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "tessera/gguf.h"

namespace tessera::quant {
namespace {

// The trit of element e of a TQ1_0 block, read per blocks.h: (byte, place k).
struct Tq1Place {
  int byte;  // index into qs (0..47) or 48 + index into qh
  int k;
};
Tq1Place tq1_place(int e) {
  if (e < 160) return {e % 32, e / 32};
  if (e < 240) return {32 + (e - 160) % 16, (e - 160) / 16};
  return {48 + (e - 240) % 4, (e - 240) / 4};
}

int trit_of_byte(uint8_t b, int k) {
  int p = 1;
  for (int i = 0; i < k; ++i) p *= 3;
  return (int(uint8_t(b * p)) * 3) >> 8;
}

std::vector<float> gaussian(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(Ternary, FormatTable) {
  for (DType t : {DType::TQ1_0, DType::TQ2_0}) {
    const Format* f = format(t);
    ASSERT_NE(f, nullptr) << dtype_name(t);
    EXPECT_EQ(f->dot_partner, DType::Q8_K);
    EXPECT_FALSE(f->needs_importance);
    EXPECT_EQ(dtype_traits(t).block_size, QK_K);
  }
  EXPECT_EQ(dtype_traits(DType::TQ1_0).type_size, sizeof(BlockTQ1_0));
  EXPECT_EQ(dtype_traits(DType::TQ2_0).type_size, sizeof(BlockTQ2_0));
}

// Five trits packed as ceil(v * 256 / 243) read back as themselves, for all 243 values.
TEST(Ternary, Tq1BytePacking) {
  for (int v = 0; v < 243; ++v) {
    const uint8_t byte = uint8_t((v * 256 + 242) / 243);
    int rest = v;
    for (int k = 4; k >= 0; --k) {
      EXPECT_EQ(trit_of_byte(byte, k), rest % 3) << "value " << v << " place " << k;
      rest /= 3;
    }
  }
  for (int b = 0; b < 256; ++b) {
    for (int k = 0; k < 5; ++k) EXPECT_LE(trit_of_byte(uint8_t(b), k), 2);
  }
}

// One element at +max, one at -max in turn: dequantization puts them where blocks.h says,
// and the packed byte holds the trit at the documented place.
TEST(Ternary, ElementOrder) {
  for (int e = 0; e < QK_K; e += 1) {
    std::vector<float> x(QK_K, 0.0f);
    x[size_t(e)] = 2.0f;
    x[size_t((e + 101) % QK_K)] = -2.0f;
    for (DType t : {DType::TQ1_0, DType::TQ2_0}) {
      std::vector<uint8_t> q(dtype_row_size(t, QK_K));
      format(t)->quantize(x.data(), q.data(), QK_K);
      std::vector<float> y(QK_K);
      format(t)->dequantize(q.data(), y.data(), QK_K);
      for (int j = 0; j < QK_K; ++j) ASSERT_EQ(y[size_t(j)], x[size_t(j)]) << dtype_name(t) << " e " << e << " j " << j;
      if (t == DType::TQ1_0) {
        const auto& b = *reinterpret_cast<const BlockTQ1_0*>(q.data());
        const Tq1Place p = tq1_place(e);
        const uint8_t byte = p.byte < 48 ? b.qs[p.byte] : b.qh[p.byte - 48];
        EXPECT_EQ(trit_of_byte(byte, p.k), 2) << "element " << e;
      } else {
        const auto& b = *reinterpret_cast<const BlockTQ2_0*>(q.data());
        const int bits = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
        EXPECT_EQ(bits, 2) << "element " << e;
      }
    }
  }
}

TEST(Ternary, QuantizeRoundsToTheLargestMagnitude) {
  std::mt19937 rng(7);
  const int64_t n = 4 * QK_K;
  std::vector<float> x = gaussian(n, rng);
  x[3] = 0.0f;
  std::fill(x.begin() + 2 * QK_K, x.begin() + 3 * QK_K, 0.0f);  // an all-zero block
  for (DType t : {DType::TQ1_0, DType::TQ2_0}) {
    std::vector<uint8_t> q(dtype_row_size(t, n));
    format(t)->quantize(x.data(), q.data(), n);
    std::vector<float> y(static_cast<size_t>(n));
    format(t)->dequantize(q.data(), y.data(), n);
    for (int64_t b = 0; b < n / QK_K; ++b) {
      float amax = 0;
      for (int j = 0; j < QK_K; ++j) amax = std::max(amax, std::fabs(x[size_t(b * QK_K + j)]));
      const float d = f16_to_f32(f32_to_f16(amax));
      for (int j = 0; j < QK_K; ++j) {
        const size_t e = size_t(b * QK_K + j);
        // The reference's formula: x times the inverse of the block's largest magnitude.
        const float want = amax == 0 ? 0.0f : float(std::lround(x[e] * (1.0f / amax))) * d;
        ASSERT_EQ(y[e], want) << dtype_name(t) << " element " << e;
      }
    }
  }
}

// Both formats hold the same numbers: dequantized and dotted to the same bits.
TEST(Ternary, BothFormatsAgreeToTheBit) {
  std::mt19937 rng(11);
  for (int64_t n : {int64_t(QK_K), int64_t(3 * QK_K), int64_t(4096)}) {
    const std::vector<float> x = gaussian(n, rng);
    std::vector<uint8_t> q1(dtype_row_size(DType::TQ1_0, n)), q2(dtype_row_size(DType::TQ2_0, n));
    quantize_tq1_0(x.data(), q1.data(), n);
    quantize_tq2_0(x.data(), q2.data(), n);
    std::vector<float> y1(static_cast<size_t>(n)), y2(static_cast<size_t>(n));
    dequantize_tq1_0(q1.data(), y1.data(), n);
    dequantize_tq2_0(q2.data(), y2.data(), n);
    EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)), 0) << "n " << n;
    const std::vector<float> a = gaussian(n, rng);
    std::vector<uint8_t> a8(dtype_row_size(DType::Q8_K, n));
    quantize_q8_K(a.data(), a8.data(), n);
    const float d1 = vec_dot_tq1_0_q8_K(n, q1.data(), a8.data());
    const float d2 = vec_dot_tq2_0_q8_K(n, q2.data(), a8.data());
    EXPECT_EQ(std::memcmp(&d1, &d2, 4), 0) << "n " << n << ": " << d1 << " vs " << d2;
  }
}

// The dot is sum over blocks of d_x d_y sum(t q): dequantize-then-multiply in double
// agrees to float rounding of the per-block products.
TEST(Ternary, DotMatchesDequantizedProduct) {
  std::mt19937 rng(13);
  for (DType t : {DType::TQ1_0, DType::TQ2_0}) {
    for (int64_t n : {int64_t(QK_K), int64_t(5 * QK_K), int64_t(11008)}) {
      const std::vector<float> w = gaussian(n, rng);
      const std::vector<float> a = gaussian(n, rng);
      std::vector<uint8_t> wq(dtype_row_size(t, n)), aq(dtype_row_size(DType::Q8_K, n));
      format(t)->quantize(w.data(), wq.data(), n);
      quantize_q8_K(a.data(), aq.data(), n);
      std::vector<float> wd(static_cast<size_t>(n)), ad(static_cast<size_t>(n));
      format(t)->dequantize(wq.data(), wd.data(), n);
      dequantize_q8_K(aq.data(), ad.data(), n);
      double want = 0, mag = 0;
      for (size_t e = 0; e < size_t(n); ++e) {
        want += double(wd[e]) * double(ad[e]);
        mag += std::fabs(double(wd[e]) * double(ad[e]));
      }
      const float got = format(t)->vec_dot(n, wq.data(), aq.data());
      EXPECT_NEAR(got, want, 1e-6 * mag + 1e-30) << dtype_name(t) << " n " << n;
    }
  }
}

// TQ2_0's unused value 3 and any TQ1_0 byte decode the same in the dot as in dequantize.
TEST(Ternary, RandomBytesDotAsDequantized) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> byte(0, 255);
  for (DType t : {DType::TQ1_0, DType::TQ2_0}) {
    const int64_t n = 4 * QK_K;
    std::vector<uint8_t> wq(dtype_row_size(t, n));
    for (uint8_t& b : wq) b = uint8_t(byte(rng));
    const size_t bb = dtype_traits(t).type_size;
    for (size_t off = 0; off < wq.size(); off += bb) {
      const uint16_t d = f32_to_f16(0.03f);
      std::memcpy(wq.data() + off + bb - 2, &d, 2);  // d is the last field of both
    }
    const std::vector<float> a = gaussian(n, rng);
    std::vector<uint8_t> aq(dtype_row_size(DType::Q8_K, n));
    quantize_q8_K(a.data(), aq.data(), n);
    std::vector<float> wd(static_cast<size_t>(n)), ad(static_cast<size_t>(n));
    format(t)->dequantize(wq.data(), wd.data(), n);
    dequantize_q8_K(aq.data(), ad.data(), n);
    double want = 0, mag = 0;
    for (size_t e = 0; e < size_t(n); ++e) {
      want += double(wd[e]) * double(ad[e]);
      mag += std::fabs(double(wd[e]) * double(ad[e]));
    }
    EXPECT_NEAR(format(t)->vec_dot(n, wq.data(), aq.data()), want, 1e-6 * mag) << dtype_name(t);
  }
}

// Our quantizer reproduces the reference quantizer's files block for block.
TEST(Ternary, RequantizingF16GivesTheFilesBlocks) {
  TESSERA_REQUIRE_SHARED(f16_path, "models/mini-llama-f16.gguf");
  Result<std::unique_ptr<gguf::File>> f16 = gguf::File::open(f16_path);
  ASSERT_TRUE(f16.is_ok()) << f16.status().message();
  for (const char* type : {"TQ1_0", "TQ2_0"}) {
    TESSERA_REQUIRE_SHARED(path, std::string("models/mini-llama-") + type + ".gguf");
    Result<std::unique_ptr<gguf::File>> file = gguf::File::open(path);
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    int ternary_tensors = 0;
    for (const gguf::TensorInfo& t : (*file)->tensors()) {
      if (t.type != DType::TQ1_0 && t.type != DType::TQ2_0) continue;
      ++ternary_tensors;
      const gguf::TensorInfo* orig = (*f16)->find_tensor(t.name);
      ASSERT_NE(orig, nullptr) << t.name;
      ASSERT_EQ(orig->type, DType::F16);
      std::vector<float> x(static_cast<size_t>(orig->n_elements()));
      const auto* h = reinterpret_cast<const uint16_t*>(orig->data);
      for (size_t i = 0; i < x.size(); ++i) x[i] = f16_to_f32(h[i]);
      std::vector<uint8_t> mine(size_t(t.nbytes));
      ASSERT_EQ(quantize_rows(t.type, x.data(), mine.data(), t.n_elements() / t.ne[0], t.ne[0]), t.nbytes);
      const size_t bb = dtype_traits(t.type).type_size;
      size_t differ = 0;
      for (size_t off = 0; off < mine.size(); off += bb) differ += std::memcmp(mine.data() + off, t.data + off, bb) != 0;
      EXPECT_EQ(differ, 0u) << type << " " << t.name << ": " << differ << " of " << mine.size() / bb
                            << " blocks differ";
    }
    EXPECT_EQ(ternary_tensors, 14) << type << ": 2 layers x 7 matrices";
  }
}

}  // namespace
}  // namespace tessera::quant
