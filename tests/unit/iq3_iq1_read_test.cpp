// Reading IQ3_XXS, IQ3_S, IQ1_S and IQ1_M (src/quant/iq3.cpp, iq1.cpp):
//  - one hand-made block per format, its fields set to values decoded by hand from the
//    layouts in blocks.h (grid entries as listed in iq_grids.cpp), against literal values;
//  - the reference dot with Q8_K against dequantize-then-multiply in double, on blocks of
//    random bytes (any bit pattern is a valid block) and 1..16 blocks;
//  - the format table's entries and quantize_rows refusing a format it cannot write.
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

constexpr DType kTypes[] = {DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S, DType::IQ1_M};

std::vector<float> dequantize_block(DType t, const void* block) {
  std::vector<float> y(QK_K);
  format(t)->dequantize(block, y.data(), QK_K);
  return y;
}

// d = 0.5; every group index 0 (grid point 4, 4, 4, 4), no signs, scale 0 (0.125) except
// sub-block 1: scale 15 (3.875), its group 4 on grid entry 5 (62, 12, 4, 4), group 5 on
// entry 1 (20, 4, 4, 4), sign index 1 for its elements 16..23 (mask 0x81: the first and,
// for an even count, the eighth negative).
TEST(IqRead, Iq3xxsHandDecoded) {
  BlockIQ3_XXS b{};
  b.d = 0x3800;
  b.qs[8 + 4] = 5;
  b.qs[8 + 5] = 1;
  const uint32_t aux = (15u << 28) | (1u << 14);
  std::memcpy(b.qs + 64 + 4, &aux, 4);
  const std::vector<float> y = dequantize_block(DType::IQ3_XXS, &b);
  std::vector<float> want(QK_K, 4 * 0.125f);
  for (int e = 32; e < 64; ++e) want[e] = 4 * 3.875f;
  const float group[8] = {-62, 12, 4, 4, 20, 4, 4, -4};
  for (int j = 0; j < 8; ++j) want[48 + j] = group[j] * 3.875f;
  EXPECT_EQ(y, want);
}

// d = 0.25; every index 0 (1, 1, 1, 1), scale 0 (0.25) except sub-block 3: scale 7 (3.75)
// from the high nibble of scales[1], its group 5 (elements 116..119) on index
// 2 | 1 << 8 (qh[3] bit 5) = 258, entry (11, 7, 9, 5), element 117 negative (signs[14] bit 5).
TEST(IqRead, Iq3sHandDecoded) {
  BlockIQ3_S b{};
  b.d = 0x3400;
  b.scales[1] = 7 << 4;
  b.qs[24 + 5] = 2;
  b.qh[3] = 1 << 5;
  b.signs[14] = 0x20;
  const std::vector<float> y = dequantize_block(DType::IQ3_S, &b);
  std::vector<float> want(QK_K, 0.25f);
  for (int e = 96; e < 128; ++e) want[e] = 3.75f;
  const float group[4] = {11, -7, 9, 5};
  for (int j = 0; j < 4; ++j) want[116 + j] = group[j] * 3.75f;
  EXPECT_EQ(y, want);
}

// d = 1; every index 0 (all -1), scale 0 (1), delta +1/8: -0.875 everywhere except
// sub-block 2: scale 5 (11), delta -1/8, its group 1 (elements 72..79) on index
// 0x12 | 7 << 8 = 0x712, entry (0, 0, 1, 0, -1, 1, 0, 1).
TEST(IqRead, Iq1sHandDecoded) {
  BlockIQ1_S b{};
  b.d = 0x3c00;
  b.qs[8 + 1] = 0x12;
  b.qh[2] = uint16_t(0x8000 | (5 << 12) | (7 << 3));
  const std::vector<float> y = dequantize_block(DType::IQ1_S, &b);
  std::vector<float> want(QK_K, -0.875f);
  for (int e = 64; e < 96; ++e) want[e] = 11 * -1.125f;
  const float group[8] = {0, 0, 1, 0, -1, 1, 0, 1};
  for (int j = 0; j < 8; ++j) want[72 + j] = 11 * (group[j] - 0.125f);
  EXPECT_EQ(y, want);
}

// d = 2 (fp16 0x4000: nibble 3 = 4, in the top of word 3); every index 0 (all -1), scale
// 0 (1), delta +1/8: 2 * -0.875 everywhere except elements 80..95 (h = 5: word 1, bits
// 3..5) with scale 6 (13); there group 11 (elements 88..95, the high nibble of qh[5] =
// 0xd: index bits 5, delta -1/8) is on index 0x34 | 5 << 8 = 0x534, entry
// (1, -1, 1, 1, 0, 0, 1, 0).
TEST(IqRead, Iq1mHandDecoded) {
  BlockIQ1_M b{};
  const uint16_t w1 = 6 << 3;
  const uint16_t w3 = 0x4000;
  std::memcpy(b.scales + 2, &w1, 2);
  std::memcpy(b.scales + 6, &w3, 2);
  b.qs[11] = 0x34;
  b.qh[5] = 0xd0;
  const std::vector<float> y = dequantize_block(DType::IQ1_M, &b);
  std::vector<float> want(QK_K, 2 * -0.875f);
  for (int e = 80; e < 88; ++e) want[e] = 26 * -0.875f;
  const float group[8] = {1, -1, 1, 1, 0, 0, 1, 0};
  for (int j = 0; j < 8; ++j) want[88 + j] = 26 * (group[j] - 0.125f);
  EXPECT_EQ(y, want);
}

// Blocks of random bytes with a random finite super-scale in [-0.05, 0.05].
std::vector<uint8_t> random_blocks(DType t, int64_t n, std::mt19937& rng) {
  std::vector<uint8_t> q(dtype_row_size(t, n));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& v : q) v = uint8_t(byte(rng));
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  const size_t bb = dtype_traits(t).type_size;
  for (size_t off = 0; off < q.size(); off += bb) {
    const uint16_t h = f32_to_f16(scale(rng));
    if (t == DType::IQ1_M) {  // nibble k of d in the top of scale word k
      for (int k = 0; k < 4; ++k) {
        uint8_t& top = q[off + offsetof(BlockIQ1_M, scales) + 2 * size_t(k) + 1];
        top = uint8_t((top & 0x0f) | (((h >> (4 * k)) & 0xf) << 4));
      }
    } else {  // the others start with d
      std::memcpy(q.data() + off, &h, 2);
    }
  }
  return q;
}

// vec_dot(x, y) against sum dequantize(x) * dequantize(y) in double: the integer sums are
// exact, so only float rounding of the per-block scaling separates them.
TEST(IqRead, VecDotMatchesDequantizedDot) {
  std::mt19937 rng(36);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  for (DType t : kTypes) {
    const Format* f = format(t);
    for (int64_t blocks : {1, 2, 3, 7, 16}) {
      const int64_t n = blocks * QK_K;
      for (int rep = 0; rep < 4; ++rep) {
        const std::vector<uint8_t> x = random_blocks(t, n, rng);
        std::vector<float> act(static_cast<size_t>(n));
        for (float& v : act) v = gauss(rng);
        std::vector<BlockQ8_K> y(static_cast<size_t>(blocks));
        quantize_q8_K(act.data(), y.data(), n);
        std::vector<float> dx(act.size()), dy(act.size());
        f->dequantize(x.data(), dx.data(), n);
        dequantize_q8_K(y.data(), dy.data(), n);
        double exact = 0, mag = 0;
        for (size_t e = 0; e < dx.size(); ++e) {
          exact += double(dx[e]) * double(dy[e]);
          mag += std::fabs(double(dx[e]) * double(dy[e]));
        }
        const float got = f->vec_dot(n, x.data(), y.data());
        EXPECT_NEAR(double(got), exact, 1e-5 * mag + 1e-30)
            << dtype_name(t) << " n " << n << " rep " << rep;
      }
    }
  }
}

// The format table: read side present, partner Q8_K; IQ1_S / IQ1_M need importance weights.
TEST(IqRead, FormatTable) {
  for (DType t : kTypes) {
    const Format* f = format(t);
    ASSERT_NE(f, nullptr) << dtype_name(t);
    EXPECT_EQ(f->type, t);
    EXPECT_EQ(f->dot_partner, DType::Q8_K);
    EXPECT_TRUE(f->dequantize && f->vec_dot);
    EXPECT_EQ(to_float_fn(t), f->dequantize);
    EXPECT_EQ(from_float_fn(t), f->quantize);
    EXPECT_EQ(f->needs_importance, t == DType::IQ1_S || t == DType::IQ1_M) << dtype_name(t);
  }
}

}  // namespace
}  // namespace tessera::quant
