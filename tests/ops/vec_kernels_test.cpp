// Every vector level's kernels against exact or double-precision answers, on sizes
// 0..70 and 4097; the dot variants must agree with dot_f32 bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/vec.h"
#include "core/fp16.h"

namespace tessera::cpu {
namespace {

std::vector<int64_t> sizes() {
  std::vector<int64_t> s;
  for (int64_t n = 0; n <= 70; ++n) s.push_back(n);
  s.push_back(4097);
  return s;
}

std::vector<float> random_floats(int64_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Floats that exercise conversions: specials, denormals, halfway cases, and randoms.
std::vector<float> conversion_inputs() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          65504.0f,
                          65519.0f,
                          65520.0f,
                          1e10f,
                          -1e10f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          5.96e-8f,
                          2.98e-8f,
                          2.99e-8f,
                          6.1e-5f,
                          6.09e-5f,
                          1e-40f,
                          -1e-42f,
                          3.0e38f};
  for (uint32_t u :
       {0x3f801000u, 0x3f803000u, 0x3f808000u, 0x3f818000u, 0x33000000u, 0x387fe000u}) {
    float f;
    std::memcpy(&f, &u, 4);
    v.push_back(f);
    v.push_back(-f);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 4000; ++i) {
    uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, 4);
    v.push_back(f);
  }
  return v;
}

class VecKernelsTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    k_ = vec_kernels_for(GetParam());
    if (!k_) GTEST_SKIP() << "CPU lacks " << isa_name(GetParam());
  }
  const VecKernels* k_ = nullptr;
};

TEST_P(VecKernelsTest, ReportsItsLevel) { EXPECT_EQ(k_->isa, GetParam()); }

TEST_P(VecKernelsTest, F16ConversionsAreExact) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = uint16_t(i);
  std::vector<float> f(all.size());
  k_->f16_to_f32(all.data(), f.data(), int64_t(all.size()));
  for (uint32_t i = 0; i < 65536; ++i) {
    const float want = f16_to_f32(uint16_t(i));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(f[i])) << i;
    } else {
      EXPECT_EQ(bits(f[i]), bits(want)) << "half " << i;
    }
  }
  const std::vector<float> in = conversion_inputs();
  for (int64_t n : sizes()) {
    const int64_t m = std::min<int64_t>(n, int64_t(in.size()));
    std::vector<uint16_t> h(size_t(m) + 1, 0xabcd);
    k_->f32_to_f16(in.data(), h.data(), m);
    EXPECT_EQ(h[size_t(m)], 0xabcd) << "wrote past the end, n=" << m;
    for (int64_t i = 0; i < m; ++i) {
      const uint16_t want = f32_to_f16(in[size_t(i)]);
      if (std::isnan(in[size_t(i)])) {
        EXPECT_TRUE((h[size_t(i)] & 0x7c00) == 0x7c00 && (h[size_t(i)] & 0x3ff) != 0);
      } else {
        EXPECT_EQ(h[size_t(i)], want) << "float " << in[size_t(i)];
      }
    }
  }
  std::vector<uint16_t> h(in.size());
  k_->f32_to_f16(in.data(), h.data(), int64_t(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    if (!std::isnan(in[i])) {
      EXPECT_EQ(h[i], f32_to_f16(in[i])) << "bits " << bits(in[i]);
    }
  }
}

TEST_P(VecKernelsTest, Bf16ConversionsAreExact) {
  const std::vector<float> in = conversion_inputs();
  std::vector<uint16_t> h(in.size() + 1, 0xabcd);
  k_->f32_to_bf16(in.data(), h.data(), int64_t(in.size()));
  EXPECT_EQ(h.back(), 0xabcd);
  for (size_t i = 0; i < in.size(); ++i) {
    if (std::isnan(in[i])) {
      EXPECT_TRUE(std::isnan(bf16_to_f32(h[i])));
    } else {
      EXPECT_EQ(h[i], f32_to_bf16(in[i])) << "bits " << bits(in[i]);
    }
  }
  for (int64_t n : sizes()) {
    std::vector<float> back(size_t(n) + 1, 42.0f);
    const int64_t m = std::min<int64_t>(n, int64_t(in.size()));
    k_->bf16_to_f32(h.data(), back.data(), m);
    EXPECT_EQ(back[size_t(m)], 42.0f);
    for (int64_t i = 0; i < m; ++i) {
      const float want = bf16_to_f32(h[size_t(i)]);
      if (!std::isnan(want)) {
        EXPECT_EQ(bits(back[size_t(i)]), bits(want));
      }
    }
  }
}

TEST_P(VecKernelsTest, DotProducts) {
  for (int64_t n : sizes()) {
    const std::vector<float> a = random_floats(n, -2, 2, uint32_t(n));
    std::vector<std::vector<float>> b;
    for (uint32_t r = 0; r < 4; ++r)
      b.push_back(random_floats(n, -2, 2, uint32_t(1000 + 4 * n + r)));
    std::vector<uint16_t> ah(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) ah[size_t(i)] = f32_to_f16(a[size_t(i)]);
    std::vector<float> ahf(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) ahf[size_t(i)] = f16_to_f32(ah[size_t(i)]);

    double want = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      want += double(a[size_t(i)]) * b[0][size_t(i)];
      mag += std::fabs(double(a[size_t(i)]) * b[0][size_t(i)]);
    }
    const float got = k_->dot_f32(a.data(), b[0].data(), n);
    EXPECT_NEAR(got, want, 2e-7 * mag + 1e-30) << "n=" << n;
    EXPECT_NEAR(got, reference::kKernels.dot_f32(a.data(), b[0].data(), n), 4e-7 * mag + 1e-30)
        << "against the reference level, n=" << n;

    const float* rows[4] = {b[0].data(), b[1].data(), b[2].data(), b[3].data()};
    float x4[4];
    k_->dot_f32_x4(a.data(), rows, n, x4);
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(bits(x4[r]), bits(k_->dot_f32(a.data(), rows[r], n)))
          << "x4 row " << r << " n=" << n;
    }
    EXPECT_EQ(bits(k_->dot_f16_f32(ah.data(), b[1].data(), n)),
              bits(k_->dot_f32(ahf.data(), b[1].data(), n)))
        << "f16 dot, n=" << n;
    std::vector<uint16_t> ab(a.size());
    std::vector<float> abf(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ab[i] = f32_to_bf16(a[i]);
      abf[i] = bf16_to_f32(ab[i]);
    }
    EXPECT_EQ(bits(k_->dot_bf16_f32(ab.data(), b[2].data(), n)), bits(k_->dot_f32(abf.data(), b[2].data(), n)))
        << "bf16 dot, n=" << n;
  }
}

TEST_P(VecKernelsTest, Reductions) {
  for (int64_t n : sizes()) {
    const std::vector<float> x = random_floats(n, -3, 3, uint32_t(77 + n));
    double sum = 0, abs_sum = 0, sq = 0;
    float mx = -std::numeric_limits<float>::infinity();
    for (float v : x) {
      sum += v;
      abs_sum += std::fabs(v);
      sq += double(v) * v;
      mx = std::max(mx, v);
    }
    EXPECT_NEAR(k_->sum_f32(x.data(), n), sum, 2e-7 * abs_sum + 1e-30) << "n=" << n;
    EXPECT_NEAR(k_->sumsq_f32(x.data(), n), sq, 2e-7 * sq + 1e-30) << "n=" << n;
    EXPECT_EQ(k_->max_f32(x.data(), n), mx) << "n=" << n;
  }
}

TEST_P(VecKernelsTest, ElementwiseArithmeticIsExact) {
  for (int64_t n : sizes()) {
    const std::vector<float> a = random_floats(n, -3, 3, uint32_t(5 * n));
    const std::vector<float> b = random_floats(n, -3, 3, uint32_t(5 * n + 1));
    std::vector<float> y(size_t(n) + 1, 42.0f);
    auto expect_each = [&](const char* what, auto f) {
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(bits(y[size_t(i)]), bits(f(a[size_t(i)], b[size_t(i)]))) << what << " n=" << n;
      }
      ASSERT_EQ(y[size_t(n)], 42.0f) << what << " wrote past the end, n=" << n;
    };
    k_->add_f32(y.data(), a.data(), b.data(), n);
    expect_each("add", [](float u, float v) { return u + v; });
    k_->mul_f32(y.data(), a.data(), b.data(), n);
    expect_each("mul", [](float u, float v) { return u * v; });
    k_->scale_f32(y.data(), a.data(), 0.37f, n);
    expect_each("scale", [](float u, float) { return u * 0.37f; });
    k_->add_scalar_f32(y.data(), a.data(), -1.25f, n);
    expect_each("add_scalar", [](float u, float) { return u + -1.25f; });
    std::vector<float> in_place = a;
    k_->add_f32(in_place.data(), in_place.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(in_place[size_t(i)], a[size_t(i)] + b[size_t(i)]);
  }
}

TEST_P(VecKernelsTest, ExpSum) {
  for (int64_t n : sizes()) {
    std::vector<float> x = random_floats(n, -30, 5, uint32_t(9 * n));
    if (n > 3) {
      x[1] = -std::numeric_limits<float>::infinity();
      x[2] = -120.0f;  // exp underflows to a denormal or zero
    }
    const float m = 2.5f;
    std::vector<float> y(size_t(n) + 1, 42.0f);
    const float s = k_->exp_sum_f32(y.data(), x.data(), m, n);
    double want_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double want = std::exp(double(x[size_t(i)] - m));
      want_sum += want;
      EXPECT_NEAR(y[size_t(i)], want, 4e-7 * want + 1e-37) << "x=" << x[size_t(i)] << " n=" << n;
    }
    EXPECT_EQ(y[size_t(n)], 42.0f);
    EXPECT_NEAR(s, want_sum, 1e-6 * want_sum + 1e-37) << "n=" << n;
  }
}

TEST_P(VecKernelsTest, SiluAndGelu) {
  for (int64_t n : sizes()) {
    std::vector<float> x = random_floats(n, -12, 12, uint32_t(3 * n));
    if (n > 4) {
      x[0] = -100.0f;
      x[1] = 100.0f;
      x[2] = 0.0f;
      x[3] = -1e-20f;
    }
    std::vector<float> y(size_t(n) + 1, 42.0f);
    k_->silu_f32(y.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[size_t(i)];
      const double want = v / (1.0 + std::exp(-v));
      EXPECT_NEAR(y[size_t(i)], want, 5e-7 * std::fabs(want) + 1e-37) << "silu x=" << v;
    }
    EXPECT_EQ(y[size_t(n)], 42.0f);
    k_->gelu_f32(y.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[size_t(i)];
      const double u = std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v);
      const double want = v / (1.0 + std::exp(-2.0 * u));
      // u is computed in float: its rounding moves exp(-2u) by about |2u| ulp.
      const double tol = 4e-7 * (1.0 + std::fabs(2.0 * u)) * std::fabs(want) + 1e-37;
      EXPECT_NEAR(y[size_t(i)], want, tol) << "gelu x=" << v;
    }
    std::vector<float> in_place = x;
    k_->silu_f32(in_place.data(), in_place.data(), n);
    k_->silu_f32(y.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(bits(in_place[size_t(i)]), bits(y[size_t(i)]));
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, VecKernelsTest,
                         ::testing::Values(Isa::Reference, Isa::Avx2, Isa::Avx512),
                         [](const ::testing::TestParamInfo<Isa>& level) {
                           return std::string(isa_name(level.param));
                         });

TEST(VecDispatch, ActiveLevelIsSupported) {
  EXPECT_TRUE(isa_supported(active_isa()));
  EXPECT_NE(vec_kernels_for(Isa::Reference), nullptr);
  EXPECT_EQ(&vec_kernels(), vec_kernels_for(active_isa()));
}

}  // namespace
}  // namespace tessera::cpu
