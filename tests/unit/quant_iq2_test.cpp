// The 2-bit i-quants (IQ2_XXS, IQ2_XS, IQ2_S) as read by src/quant: one block of each
// decoded by hand (grid points copied from the reference engine's tables, independent of
// the index arithmetic under test), and the reference dot with Q8_K against
// dequantize-then-multiply in double on blocks of random bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/convert.h"
#include "quant/quant.h"
#include "tessera/dtype.h"

namespace tessera::quant {
namespace {

constexpr DType kIq2Types[] = {DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S};

std::string name(DType t) { return std::string(dtype_name(t)); }

// Expected elements of a group of 8: scale * magnitudes, the elements whose bit is set in
// `negative` negated.
void expect_group(const float* y, float scale, std::initializer_list<int> magnitudes, unsigned negative,
                  const std::string& what) {
  int j = 0;
  for (int m : magnitudes) {
    const float want = scale * float(m) * (((negative >> j) & 1) ? -1.0f : 1.0f);
    EXPECT_EQ(y[j], want) << what << ", element " << j;
    ++j;
  }
}

TEST(QuantIq2, FormatTable) {
  for (DType t : kIq2Types) {
    const Format* f = format(t);
    ASSERT_NE(f, nullptr) << name(t);
    EXPECT_EQ(f->dot_partner, DType::Q8_K);
    EXPECT_TRUE(f->dequantize && f->vec_dot) << name(t);
    EXPECT_TRUE(f->needs_importance) << name(t);
    EXPECT_EQ(to_float_fn(t), f->dequantize) << name(t);
    EXPECT_EQ(from_float_fn(t), f->quantize) << name(t);
  }
}

constexpr uint16_t kTwo = 0x4000;  // fp16 2.0

// Sub-block 0: groups on grid points 1, 0, 2, 200 with sign indices 1 (pattern 0x81: the
// 7-bit index has one bit, the eighth restores even parity), 0, 3 and 127 (0xff), scale
// 5: (0.5 + 5) / 4 * 2 = 2.75. The other sub-blocks are zero bytes: point 0 (all 8),
// no signs, scale 0: 0.5 / 4 * 2 = 0.25.
TEST(QuantIq2, DequantizesAHandDecodedIq2XxsBlock) {
  BlockIQ2_XXS b{};
  b.d = kTwo;
  const uint32_t a0 = 1u | 0u << 8 | 2u << 16 | 200u << 24;
  const uint32_t a1 = 1u | 0u << 7 | 3u << 14 | 127u << 21 | 5u << 28;
  std::memcpy(&b.qs[0], &a0, 4);
  std::memcpy(&b.qs[2], &a1, 4);
  float y[QK_K];
  dequantize_iq2_xxs(&b, y, QK_K);
  expect_group(y + 0, 2.75f, {43, 8, 8, 8, 8, 8, 8, 8}, 0x81, "group 0");
  expect_group(y + 8, 2.75f, {8, 8, 8, 8, 8, 8, 8, 8}, 0x00, "group 1");
  expect_group(y + 16, 2.75f, {25, 25, 8, 8, 8, 8, 8, 8}, 0x03, "group 2");
  expect_group(y + 24, 2.75f, {8, 8, 8, 8, 25, 8, 43, 25}, 0xff, "group 3");
  for (int e = 32; e < QK_K; ++e) EXPECT_EQ(y[e], 2.0f) << "element " << e;
}

// Groups 0..3 of sub-block 0 and group 6 (sub-block 1, second half), the rest zero
// bytes. Scales 0x73: 3.5 / 4 * 2 = 1.75 for groups 0-1, 7.5 / 4 * 2 = 3.75 for 2-3;
// sub-block 1: 0xa0, groups 6-7 at 10.5 / 4 * 2 = 5.25, groups 4-5 at 0.25.
TEST(QuantIq2, DequantizesAHandDecodedIq2XsBlock) {
  BlockIQ2_XS b{};
  b.d = kTwo;
  b.qs[0] = uint16_t(1 | 1 << 9);     // point 1, signs 0x81
  b.qs[1] = uint16_t(300 | 3 << 9);   // point 300, signs 0x03
  b.qs[2] = uint16_t(511 | 64 << 9);  // point 511, signs 0xc0
  b.qs[3] = uint16_t(0 | 127 << 9);   // point 0, signs 0xff
  b.qs[6] = uint16_t(2 | 2 << 9);     // point 2, signs 0x82
  b.scales[0] = 0x73;
  b.scales[1] = 0xa0;
  float y[QK_K];
  dequantize_iq2_xs(&b, y, QK_K);
  expect_group(y + 0, 1.75f, {43, 8, 8, 8, 8, 8, 8, 8}, 0x81, "group 0");
  expect_group(y + 8, 1.75f, {8, 25, 25, 8, 8, 25, 8, 25}, 0x03, "group 1");
  expect_group(y + 16, 3.75f, {43, 43, 43, 43, 43, 43, 43, 43}, 0xc0, "group 2");
  expect_group(y + 24, 3.75f, {8, 8, 8, 8, 8, 8, 8, 8}, 0xff, "group 3");
  expect_group(y + 32, 0.25f, {8, 8, 8, 8, 8, 8, 8, 8}, 0x00, "group 4");
  expect_group(y + 40, 0.25f, {8, 8, 8, 8, 8, 8, 8, 8}, 0x00, "group 5");
  expect_group(y + 48, 5.25f, {25, 25, 8, 8, 8, 8, 8, 8}, 0x82, "group 6");
  expect_group(y + 56, 5.25f, {8, 8, 8, 8, 8, 8, 8, 8}, 0x00, "group 7");
  for (int e = 64; e < QK_K; ++e) EXPECT_EQ(y[e], 2.0f) << "element " << e;  // 8 * 0.25
}

// Group 5 (sub-block 1, l = 1): index 0x34 | 2 << 8 = 564, signs 0xa5 (any pattern: no
// parity rule). Group 0: 77 | 0 << 8, signs 0x01. Group 31 (sub-block 7, l = 3): 0xff |
// 3 << 8 = 1023, signs 0x80. Scales: sub-block 0 low 0x1 (1.5 / 4 * 2 = 0.75); sub-block
// 1 low nibble 4 (4.5 / 4 * 2 = 2.25); sub-block 7 high nibble 15 (15.5 / 4 * 2 = 7.75:
// groups 30 and 31).
TEST(QuantIq2, DequantizesAHandDecodedIq2SBlock) {
  BlockIQ2_S b{};
  b.d = kTwo;
  b.qs[0] = 77;
  b.qs[32 + 0] = 0x01;
  b.qs[5] = 0x34;
  b.qh[1] = 2 << 2;
  b.qs[32 + 5] = 0xa5;
  b.qs[31] = 0xff;
  b.qh[7] = 3 << 6;
  b.qs[32 + 31] = 0x80;
  b.scales[0] = 0x01;
  b.scales[1] = 0x04;
  b.scales[7] = 0xf0;
  float y[QK_K];
  dequantize_iq2_s(&b, y, QK_K);
  expect_group(y + 0, 0.75f, {25, 25, 8, 43, 43, 8, 8, 8}, 0x01, "group 0");
  expect_group(y + 8, 0.75f, {8, 8, 8, 8, 8, 8, 8, 8}, 0x00, "group 1");
  expect_group(y + 40, 2.25f, {25, 25, 25, 25, 8, 25, 8, 25}, 0xa5, "group 5");
  expect_group(y + 48, 0.25f, {8, 8, 8, 8, 8, 8, 8, 8}, 0x00, "group 6");
  expect_group(y + 240, 7.75f, {8, 8, 8, 8, 8, 8, 8, 8}, 0x00, "group 30");
  expect_group(y + 248, 7.75f, {43, 43, 43, 43, 43, 43, 43, 43}, 0x80, "group 31");
}

// Random bytes (every index, sign and scale pattern) with a finite fp16 scale.
std::vector<uint8_t> random_blocks(DType t, int64_t n, std::mt19937& rng) {
  std::vector<uint8_t> q(dtype_row_size(t, n));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (uint8_t& b : q) b = uint8_t(byte(rng));
  for (size_t off = 0; off < q.size(); off += dtype_traits(t).type_size) {
    const uint16_t h = f32_to_f16(scale(rng));
    std::memcpy(q.data() + off, &h, 2);  // d is the first field of every IQ2 block
  }
  return q;
}

// vec_dot against the double-precision dot of both dequantized rows. The integer sums
// are exact, so they differ by the rounding of the dequantized values and of the float
// accumulation: a few ulps of sum |x_e y_e|.
TEST(QuantIq2, DotMatchesDequantizedProduct) {
  std::mt19937 rng(36);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  for (DType t : kIq2Types) {
    const Format* f = format(t);
    for (int64_t blocks : {1, 2, 3, 7, 16}) {
      const int64_t n = blocks * QK_K;
      for (int rep = 0; rep < 4; ++rep) {
        const std::vector<uint8_t> x = random_blocks(t, n, rng);
        std::vector<float> a(static_cast<size_t>(n));
        for (float& v : a) v = gauss(rng);
        std::vector<uint8_t> y(dtype_row_size(DType::Q8_K, n));
        quantize_q8_K(a.data(), y.data(), n);
        std::vector<float> xf(a.size()), yf(a.size());
        f->dequantize(x.data(), xf.data(), n);
        dequantize_q8_K(y.data(), yf.data(), n);
        double want = 0, mag = 0;
        for (size_t e = 0; e < xf.size(); ++e) {
          want += double(xf[e]) * double(yf[e]);
          mag += std::fabs(double(xf[e]) * double(yf[e]));
        }
        const float got = f->vec_dot(n, x.data(), y.data());
        EXPECT_NEAR(double(got), want, 1e-6 * mag) << name(t) << ", " << blocks << " blocks";
      }
    }
  }
}

}  // namespace
}  // namespace tessera::quant
