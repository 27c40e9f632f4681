// The scalar math the CUDA elementwise/norm/rope/softmax/copy kernels share
// (src/backend/cuda/elementwise_math.h), compiled for the host: the activations against
// the CPU reference kernels and a double reference, rope's angles and rotation against
// the CPU's formulas, and the Q8_0 rounding against src/quant's quantizer. (Its F16/BF16
// conversions are core/fp16.h's own, which are host and device code.) No GPU and no CUDA
// header needed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <random>
#include <vector>

#include "backend/cpu/vec.h"
#include "backend/cuda/elementwise_math.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace tessera {
namespace {

namespace cm = cuda::math;

std::vector<float> activation_inputs() {
  std::vector<float> x;
  for (int i = -4000; i <= 4000; ++i) x.push_back(float(i) * 0.005f);  // [-20, 20]
  const float extra[] = {-100.0f, -88.0f, -50.0f, 50.0f, 88.0f, 100.0f, 1e-30f, -1e-30f, 0.0f, -0.0f};
  for (float e : extra) x.push_back(e);
  return x;
}

// The reference CPU kernels are the specification; the host compiler may round the
// shared expression differently only by contraction, so allow an ulp or two.
void expect_close(float got, float want, float x) {
  EXPECT_NEAR(got, want, 2.5e-7f * std::fabs(want) + 1e-37f) << "x = " << x;
}

TEST(CudaElementwiseMath, SiluMatchesCpuReference) {
  const std::vector<float> x = activation_inputs();
  std::vector<float> want(x.size());
  cpu::reference::kKernels.silu_f32(want.data(), x.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    expect_close(cm::silu(x[i]), want[i], x[i]);
    const double d = double(x[i]);
    EXPECT_NEAR(cm::silu(x[i]), d / (1.0 + std::exp(-d)), 1e-6 * std::fabs(d) + 1e-37);
  }
}

TEST(CudaElementwiseMath, GeluMatchesCpuReferenceAndTanhForm) {
  const std::vector<float> x = activation_inputs();
  std::vector<float> want(x.size());
  cpu::reference::kKernels.gelu_f32(want.data(), x.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    expect_close(cm::gelu(x[i]), want[i], x[i]);
    const double d = double(x[i]);
    const double tanh_form = 0.5 * d * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (d + 0.044715 * d * d * d)));
    EXPECT_NEAR(cm::gelu(x[i]), tanh_form, 2e-6 * std::fabs(d) + 1e-30) << "x = " << x[i];
  }
}

TEST(CudaElementwiseMath, ReluSqrAndClamp) {
  EXPECT_EQ(cm::relu_sqr(-3.0f), 0.0f);
  EXPECT_EQ(cm::relu_sqr(3.0f), 9.0f);
  EXPECT_EQ(cm::clamp(-2.0f, -1.0f, 1.0f), -1.0f);
  EXPECT_EQ(cm::clamp(2.0f, -1.0f, 1.0f), 1.0f);
  EXPECT_EQ(cm::clamp(0.5f, -1.0f, 1.0f), 0.5f);
  EXPECT_TRUE(std::isnan(cm::clamp(NAN, -1.0f, 1.0f)));  // as the CPU's ternaries
}

// The CPU's fill_cache (src/backend/cpu/ops/rope.cpp), written out.
double cpu_theta(int32_t pos, float base, float scale, int64_t i, int n_dims, const float* factors) {
  const double inv_freq = std::pow(double(base), -2.0 * double(i) / double(n_dims));
  double theta = double(pos) * double(scale) * inv_freq;
  if (factors) theta /= double(factors[i]);
  return theta;
}

TEST(CudaElementwiseMath, RopeThetaMatchesCpu) {
  const float factors[4] = {1.0f, 2.5f, 8.0f, 32.0f};
  const int32_t positions[] = {0, 1, 7, 100, 4095, 131071};
  const float bases[] = {10000.0f, 500000.0f, 1e6f};
  const float scales[] = {1.0f, 0.25f};
  for (int32_t p : positions) {
    for (float b : bases) {
      for (float s : scales) {
        for (int n_dims : {8, 64, 128}) {
          for (int64_t i = 0; i < n_dims / 2; ++i) {
            const double plain = cm::rope_theta(p, b, s, i, n_dims, 1.0f);
            ASSERT_EQ(plain, cpu_theta(p, b, s, i, n_dims, nullptr));
            ASSERT_EQ(float(std::cos(plain)), float(std::cos(cpu_theta(p, b, s, i, n_dims, nullptr))));
            if (n_dims == 8) {
              ASSERT_EQ(cm::rope_theta(p, b, s, i, n_dims, factors[i]),
                        cpu_theta(p, b, s, i, n_dims, factors));
            }
          }
        }
      }
    }
  }
}

TEST(CudaElementwiseMath, RopeRotateRoundsEachProduct) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (int k = 0; k < 10000; ++k) {
    const float x0 = u(rng), x1 = u(rng);
    const double th = double(u(rng));
    const float c = float(std::cos(th)), s = float(std::sin(th));
    float y0, y1;
    cm::rope_rotate(x0, x1, c, s, &y0, &y1);
    // As the CPU's rotate() without contraction: each product rounded, then the sum.
    const float p0 = x0 * c, p1 = x1 * s, p2 = x0 * s, p3 = x1 * c;
    ASSERT_EQ(y0, p0 - p1);
    ASSERT_EQ(y1, p2 + p3);
  }
}

// The kernel's Q8_0 block: absmax ignoring NaNs, then the scale and quants.
void q8_0_as_kernel(const float* x, quant::BlockQ8_0* out) {
  float amax = 0.0f;
  for (int j = 0; j < quant::QK8_0; ++j) amax = std::fmax(amax, std::fmax(0.0f, std::fabs(x[j])));
  const float d = cm::q8_0_scale(amax);
  out->d = cm::f32_to_f16(d);
  for (int j = 0; j < quant::QK8_0; ++j) out->qs[j] = cm::q8_0_quant(x[j], cm::q8_0_inverse(d));
}

TEST(CudaElementwiseMath, Q8_0MatchesReferenceQuantizer) {
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.0f, 1.0f);
  constexpr int kBlocks = 4096;
  std::vector<float> x(size_t(kBlocks) * quant::QK8_0);
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t b = i / quant::QK8_0;
    x[i] = g(rng) * (b % 3 == 0 ? 1e-3f : (b % 3 == 1 ? 1.0f : 300.0f));
    if (b % 17 == 0) x[i] = float(int(x[i] * 4)) / 4;  // ties of x / d
  }
  std::fill(x.begin(), x.begin() + quant::QK8_0, 0.0f);  // an all-zero block
  std::vector<quant::BlockQ8_0> want(kBlocks), got(kBlocks);
  quant::quantize_q8_0(x.data(), want.data(), int64_t(x.size()));
  for (int b = 0; b < kBlocks; ++b) q8_0_as_kernel(x.data() + size_t(b) * quant::QK8_0, &got[size_t(b)]);
  for (int b = 0; b < kBlocks; ++b) {
    ASSERT_EQ(got[size_t(b)].d, want[size_t(b)].d) << "block " << b;
    ASSERT_EQ(std::memcmp(got[size_t(b)].qs, want[size_t(b)].qs, quant::QK8_0), 0) << "block " << b;
  }
}

}  // namespace
}  // namespace tessera
