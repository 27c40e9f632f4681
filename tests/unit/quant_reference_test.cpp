// Reference quantization (src/quant): round-trip error of every format on Gaussian data
// with and without outliers, row helpers on odd row counts, special inputs, and the
// integer dot products against the activation partners.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "tessera/dtype.h"
#include "quant/convert.h"

namespace tessera::quant {
namespace {

// Round-trip bounds: RMSE(dequantize(quantize(x)) - x) / RMS(x) on 64 Ki values. The
// comment of each row gives what was measured (Gaussian / with outliers); the bounds
// leave about 25% margin.
struct Case {
  DType type;
  double gauss;    // N(0, 1)
  double outlier;  // N(0, 1) with about 1 value in 64 scaled by 10
};

constexpr Case kCases[] = {
    {DType::Q4_0, 0.11, 0.19},      // 0.0863 / 0.1515
    {DType::Q4_1, 0.10, 0.13},      // 0.0785 / 0.1035
    {DType::Q5_0, 0.055, 0.10},     // 0.0427 / 0.0772
    {DType::Q5_1, 0.05, 0.065},     // 0.0378 / 0.0502
    {DType::Q8_0, 0.0075, 0.0125},  // 0.0054 / 0.0097
    {DType::Q8_1, 0.0075, 0.0125},  // 0.0054 / 0.0097
    {DType::Q2_K, 0.36, 0.41},      // 0.2966 / 0.3287
    {DType::Q3_K, 0.19, 0.24},      // 0.1509 / 0.1936
    {DType::Q4_K, 0.09, 0.12},      // 0.0716 / 0.0968
    {DType::Q5_K, 0.045, 0.06},     // 0.0362 / 0.0487
    {DType::Q6_K, 0.023, 0.036},    // 0.0178 / 0.0286
    {DType::Q8_K, 0.009, 0.027},    // 0.0070 / 0.0214
};

const Case& case_of(DType t) {
  for (const Case& c : kCases) {
    if (c.type == t) return c;
  }
  ADD_FAILURE() << "no case for " << dtype_name(t);
  return kCases[0];
}

float f16_bits_to_float(uint16_t h) { return f16_to_f32(h); }

std::string type_name(DType t) { return std::string(dtype_name(t)); }

std::vector<float> gaussian(size_t n, uint32_t seed, bool outliers) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = dist(rng);
    if (outliers && rng() % 64 == 0) v[i] *= 10.0f;
  }
  return v;
}

std::vector<uint8_t> quantize(DType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(dtype_row_size(t, int64_t(x.size())));
  format(t)->quantize(x.data(), q.data(), int64_t(x.size()));
  return q;
}

std::vector<float> dequantize(DType t, const std::vector<uint8_t>& q, size_t n) {
  std::vector<float> y(n);
  format(t)->dequantize(q.data(), y.data(), int64_t(n));
  return y;
}

double relative_rmse(const std::vector<float>& x, const std::vector<float>& y) {
  double err = 0;
  double ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
    ref += double(x[i]) * x[i];
  }
  return std::sqrt(err / ref);
}

TEST(QuantReference, FormatTable) {
  for (const Case& c : kCases) {
    const Format* f = format(c.type);
    ASSERT_NE(f, nullptr) << type_name(c.type);
    EXPECT_EQ(f->type, c.type);
    EXPECT_NE(format(f->dot_partner), nullptr);
    EXPECT_TRUE(f->quantize && f->dequantize && f->vec_dot);
    EXPECT_EQ(to_float_fn(c.type), f->dequantize) << type_name(c.type);
    EXPECT_EQ(from_float_fn(c.type), f->quantize) << type_name(c.type);
  }
  EXPECT_EQ(format(DType::F32), nullptr);
  EXPECT_EQ(format(DType::F16), nullptr);
  EXPECT_EQ(format(DType::Q4_0_X16), nullptr);
  EXPECT_EQ(format(DType::Q4_0)->dot_partner, DType::Q8_0);
  EXPECT_EQ(format(DType::Q5_1)->dot_partner, DType::Q8_1);
  EXPECT_EQ(format(DType::Q3_K)->dot_partner, DType::Q8_K);
}

TEST(QuantReference, RoundTripError) {
  for (const Case& c : kCases) {
    const int64_t bs = dtype_traits(c.type).block_size;
    const size_t n = size_t(bs) * (65536 / size_t(bs));
    for (bool outliers : {false, true}) {
      const std::vector<float> x = gaussian(n, 1234, outliers);
      const double e = relative_rmse(x, dequantize(c.type, quantize(c.type, x), n));
      const double bound = outliers ? c.outlier : c.gauss;
      std::printf("  %-5s %-8s relative RMSE %.5f (bound %.3f)\n", type_name(c.type).c_str(),
                  outliers ? "outliers" : "gauss", e, bound);
      EXPECT_LT(e, bound) << type_name(c.type) << (outliers ? " with outliers" : "");
    }
  }
}

// Rows: an odd number of rows of several blocks each; quantize_rows and
// dequantize_rows agree with converting the whole buffer at once (blocks are
// independent) and with the dtype traits.
TEST(QuantReference, OddRowCounts) {
  for (const Case& c : kCases) {
    const int64_t bs = dtype_traits(c.type).block_size;
    for (int64_t rows : {1, 3, 7}) {
      const int64_t n_per_row = 5 * bs;
      const std::vector<float> x = gaussian(size_t(rows * n_per_row), uint32_t(rows), false);
      std::vector<uint8_t> by_rows(dtype_row_size(c.type, n_per_row) * size_t(rows));
      EXPECT_EQ(quantize_rows(c.type, x.data(), by_rows.data(), rows, n_per_row), by_rows.size());
      EXPECT_EQ(by_rows, quantize(c.type, x)) << type_name(c.type) << " rows " << rows;
      std::vector<float> y(x.size());
      dequantize_rows(c.type, by_rows.data(), y.data(), rows, n_per_row);
      EXPECT_EQ(y, dequantize(c.type, by_rows, x.size())) << type_name(c.type);
      std::vector<float> last(static_cast<size_t>(n_per_row));
      const size_t row_bytes = dtype_row_size(c.type, n_per_row);
      quant::to_float_fn(c.type)(by_rows.data() + size_t(rows - 1) * row_bytes, last.data(),
                                    n_per_row);
      EXPECT_TRUE(std::equal(last.begin(), last.end(), y.end() - n_per_row)) << type_name(c.type);
      EXPECT_LT(relative_rmse(x, y), c.gauss * 1.5) << type_name(c.type) << " rows " << rows;
    }
  }
}

// Zeros give zeros; constant, tiny and large rows give finite values close to the input.
TEST(QuantReference, SpecialInputs) {
  for (const Case& c : kCases) {
    const size_t n = size_t(dtype_traits(c.type).block_size) * 2;
    const std::vector<float> zeros(n, 0.0f);
    for (float v : dequantize(c.type, quantize(c.type, zeros), n))
      EXPECT_EQ(v, 0.0f) << type_name(c.type);
    for (float value : {0.75f, -3.0f, 1e-30f, 1000.0f}) {
      std::vector<float> x(n, value);
      x[n / 2] = value * 0.5f;  // not all equal
      const std::vector<float> y = dequantize(c.type, quantize(c.type, x), n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(std::isfinite(y[i])) << type_name(c.type) << " value " << value;
        EXPECT_NEAR(y[i], x[i], std::fabs(value) * 0.6 + 1e-6)
            << type_name(c.type) << " value " << value;
      }
      if (std::fabs(value) > 1e-3f) {
        EXPECT_LT(relative_rmse(x, y), c.outlier) << type_name(c.type) << " value " << value;
      }
    }
  }
}

// A hand-made Q4_0 block: d = 0.5, element j has nibble j % 16 and element j + 16 has 15 - j.
TEST(QuantReference, Q4_0Layout) {
  BlockQ4_0 b{};
  b.d = 0x3800;  // fp16 0.5
  for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | ((15 - j) << 4));
  float y[QK4_0];
  dequantize_q4_0(&b, y, QK4_0);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * float(j - 8));
    EXPECT_EQ(y[j + 16], 0.5f * float(7 - j));
  }
}

// The partners' cached sums: Q8_1's s = fp16(d * sum(qs)), Q8_K's bsums.
TEST(QuantReference, PartnerSums) {
  const std::vector<float> x = gaussian(size_t(QK_K) * 4, 7, true);
  std::vector<BlockQ8_1> a(x.size() / QK8_1);
  quantize_q8_1(x.data(), a.data(), int64_t(x.size()));
  for (const BlockQ8_1& b : a) {
    int sum = 0;
    for (int8_t q : b.qs) sum += q;
    const float d = float(sum) * f16_bits_to_float(b.d);
    EXPECT_NEAR(f16_bits_to_float(b.s), d, std::fabs(d) * 1e-3 + 1e-6);
  }
  std::vector<BlockQ8_K> k(x.size() / QK_K);
  quantize_q8_K(x.data(), k.data(), int64_t(x.size()));
  for (const BlockQ8_K& b : k) {
    for (int j = 0; j < QK_K / 16; ++j) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b.qs[16 * j + l];
      EXPECT_EQ(b.bsums[j], sum);
    }
  }
}

struct DotCheck {
  double vec_dot;
  double exact;    // dot(dequantize(x), dequantize(y)) in double
  double abs_sum;  // sum of |products| of the dequantized values
  double plain;    // dot(x, y) of the original floats
  double norms;    // |x| * |y|
};

DotCheck dot_check(DType t, const std::vector<float>& x, const std::vector<float>& y) {
  const Format* f = format(t);
  const std::vector<uint8_t> qx = quantize(t, x);
  const std::vector<uint8_t> qy = quantize(f->dot_partner, y);
  const std::vector<float> dx = dequantize(t, qx, x.size());
  const std::vector<float> dy = dequantize(f->dot_partner, qy, y.size());
  DotCheck c{};
  c.vec_dot = f->vec_dot(int64_t(x.size()), qx.data(), qy.data());
  double xx = 0, yy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    c.exact += double(dx[i]) * dy[i];
    c.abs_sum += std::fabs(double(dx[i]) * dy[i]);
    c.plain += double(x[i]) * y[i];
    xx += double(x[i]) * x[i];
    yy += double(y[i]) * y[i];
  }
  c.norms = std::sqrt(xx * yy);
  return c;
}

// vec_dot is dot(dequantize(x), dequantize(y)) up to float rounding, and within the two
// formats' round-trip errors of the plain float dot (|dx.y + x.dy + dx.dy| <= ... by
// Cauchy-Schwarz).
TEST(QuantReference, VecDotMatchesDequantizedDot) {
  for (const Case& c : kCases) {
    const DType partner = format(c.type)->dot_partner;
    const double ex = c.gauss;
    const double ey = case_of(partner).outlier;
    for (size_t blocks : {1, 3, 16}) {
      const size_t n = size_t(dtype_traits(c.type).block_size) * blocks;
      for (uint32_t seed = 0; seed < 4; ++seed) {
        const std::vector<float> x = gaussian(n, 100 + seed, false);
        const std::vector<float> y = gaussian(n, 200 + seed, true);
        const DotCheck d = dot_check(c.type, x, y);
        EXPECT_NEAR(d.vec_dot, d.exact, 1e-5 * d.abs_sum) << type_name(c.type) << " n " << n;
        EXPECT_NEAR(d.vec_dot, d.plain, (ex + ey + ex * ey) * d.norms)
            << type_name(c.type) << " n " << n;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::quant
