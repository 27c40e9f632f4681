// The _X16 GEMM kernel tables (backend/cpu/gemm_kernels.h) called directly: every level
// this CPU runs must give the reference level's bits for every weight layout, every tile
// width (1..13 columns: full tiles and every tail) and 1..3 blocks, on weights that
// mul_mat's tests never see: arbitrary bytes (Q8_0's -128, all-15 nibbles, all-63 Q6_K
// quants, negative Q6_K scales, IQ4 nibbles all 0 = -127 and IQ4_XS scales all -32 or 31) against activation blocks quantized from rows whose
// quants reach +-127 with one sign, where an inexact int16 step would saturate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/gemm_kernels.h"
#include "backend/cpu/repack.h"
#include "backend/cpu/vec.h"
#include "core/fp16.h"

namespace tessera::test {
namespace {

using cpu::GemmKernels;
using cpu::Isa;
using cpu::kGroupRows;

struct X16Layout {
  DType type;
  int64_t block;       // elements per block / super-block
  size_t quant_bytes;  // per block, 16 rows
  size_t meta_bytes;   // per block, 16 rows, after all quants
};

const X16Layout kLayouts[] = {
    {DType::Q4_0_X16, 32, 256, 32},
    {DType::Q8_0_X16, 32, 512, 32},
    {DType::Q4_K_X16, 256, 2048, 256},
    {DType::Q6_K_X16, 256, 3072, 288},
    {DType::IQ4_NL_X16, 32, 256, 32},
    {DType::IQ4_XS_X16, 256, 2048, 128},
};

// Weight bytes of one pattern: 0 random, 1 all 0x00, 2 all 0xFF, 3 random extremes.
uint8_t weight_byte(int pattern, std::mt19937& rng) {
  switch (pattern) {
    case 1:
      return 0x00;
    case 2:
      return 0xFF;
    case 3:
      return (rng() & 1) ? 0xFF : 0x00;
    default:
      return uint8_t(rng());
  }
}

uint16_t random_scale(std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  return f32_to_f16(dist(rng));
}

// A group of 16 rows in layout l with nb blocks: quants (and the scale bytes of the
// k-quants) from the pattern, fp16 d / dmin finite.
std::vector<uint8_t> weights(const X16Layout& l, int64_t nb, int pattern, std::mt19937& rng) {
  std::vector<uint8_t> w(size_t(nb) * (l.quant_bytes + l.meta_bytes));
  for (uint8_t& b : w) b = weight_byte(pattern, rng);
  uint8_t* meta = w.data() + size_t(nb) * l.quant_bytes;
  auto put = [&](size_t off, int count) {
    for (int i = 0; i < count; ++i) {
      const uint16_t h = random_scale(rng);
      std::memcpy(meta + off + size_t(i) * 2, &h, 2);
    }
  };
  for (int64_t b = 0; b < nb; ++b) {
    const size_t base = size_t(b) * l.meta_bytes;
    switch (l.type) {
      case DType::Q4_0_X16:
      case DType::Q8_0_X16:
      case DType::IQ4_NL_X16:
      case DType::IQ4_XS_X16:  // d; then IQ4_XS's packed scale bytes (pattern)
        put(base, kGroupRows);
        break;
      case DType::Q4_K_X16:
        put(base, 2 * kGroupRows);  // d, dmin; then the packed scale words (pattern)
        break;
      default:
        put(base + 256, kGroupRows);  // Q6_K: int8 scales (pattern), then d
        break;
    }
  }
  return w;
}

// n activation rows of k floats: per block of 32 one sign and a value of magnitude 1,
// so the quants reach +-127 (pattern 0: random values instead).
std::vector<float> activations(int64_t n, int64_t k, int pattern, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n * k));
  for (size_t i = 0; i < x.size(); i += 32) {
    const float sign = (rng() & 1) ? 1.0f : -1.0f;
    for (size_t e = i; e < i + 32; ++e) {
      x[e] = pattern == 0 ? dist(rng)
                          : sign * ((e % 3 == 0) ? 1.0f : 0.5f + 0.5f * std::fabs(dist(rng)));
    }
  }
  return x;
}

// Runs table g on n_groups consecutive groups at w (one call): n_cols columns of
// activations, outputs [n_cols][16 * n_groups].
std::vector<float> run(const GemmKernels& g, const X16Layout& l, const std::vector<uint8_t>& w,
                       int64_t nb, const std::vector<float>& x, int64_t n_cols, int64_t n_groups = 1) {
  const int64_t k = nb * l.block;
  const bool k_quant = l.block == 256;
  const size_t act_row =
      k_quant ? size_t(nb) * sizeof(cpu::BlockQ8KX) : size_t(nb) * sizeof(cpu::BlockQ8X);
  std::vector<uint8_t> act(act_row * size_t(n_cols));
  for (int64_t c = 0; c < n_cols; ++c) {
    if (k_quant) {
      g.quantize_q8kx(x.data() + c * k, act.data() + size_t(c) * act_row, k);
    } else {
      g.quantize_q8x(x.data() + c * k, act.data() + size_t(c) * act_row, k,
                     cpu::x16_zero_point(l.type));
    }
  }
  const size_t stride = size_t(n_groups * kGroupRows);
  std::vector<float> out(static_cast<size_t>(n_cols) * stride);
  cpu::gemm_x16(g, l.type)(w.data(), n_groups, nb, act.data(), act_row, n_cols, out.data(), stride);
  return out;
}

// n_groups groups (w holds them back to back) in one call: outputs [n_cols][16 * n_groups].
std::vector<float> run_f16(const GemmKernels& g, const std::vector<uint16_t>& w, int64_t k,
                           const std::vector<float>& x, int64_t n_cols, int64_t n_groups = 1) {
  const size_t stride = size_t(n_groups * kGroupRows);
  std::vector<float> out(static_cast<size_t>(n_cols) * stride);
  g.gemm_f16_x16(w.data(), n_groups, k, x.data(), size_t(k), n_cols, out.data(), stride);
  return out;
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
        << what << ": column " << i / kGroupRows << " row " << i % kGroupRows << ": " << got[i]
        << " vs " << want[i];
  }
}

// The vector tables this CPU runs: AVX2 without and with AVX-VNNI, AVX-512.
std::vector<const GemmKernels*> vector_levels() {
  std::vector<const GemmKernels*> levels;
  for (const GemmKernels* g : {cpu::gemm_kernels_avx2(false), cpu::gemm_kernels_avx2(true),
                               cpu::gemm_kernels_for(Isa::Avx512)}) {
    if (g != nullptr) levels.push_back(g);
  }
  return levels;
}

std::string level_name(const GemmKernels* g) {
  return g == cpu::gemm_kernels_avx2(true) ? "avx2+vnni" : std::string(cpu::isa_name(g->isa));
}

TEST(GemmX16Test, QuantizedLayoutsMatchReferenceToTheBit) {
  const GemmKernels& ref = cpu::reference::kGemmKernels;
  std::mt19937 rng(7);
  for (const GemmKernels* g : vector_levels()) {
    for (const X16Layout& l : kLayouts) {
      for (int pattern = 0; pattern < 4; ++pattern) {
        for (int64_t nb = 1; nb <= 3; ++nb) {
          const std::vector<uint8_t> w = weights(l, nb, pattern, rng);
          for (int64_t n = 1; n <= 13; ++n) {
            const std::vector<float> x = activations(n, nb * l.block, pattern, rng);
            expect_same_bits(run(*g, l, w, nb, x, n), run(ref, l, w, nb, x, n),
                             level_name(g) + " " +
                                 std::string(dtype_name(l.type)) + " pattern " +
                                 std::to_string(pattern) + " nb " + std::to_string(nb) +
                                 " columns " + std::to_string(n));
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

// Several groups per call (decode reads two side by side, kernels/x86_avx2/gemm_x16.cpp):
// every output is the reference's for its group alone, for even and odd group counts.
TEST(GemmX16Test, SeveralGroupsPerCallMatchOneGroupOfTheReference) {
  const GemmKernels& ref = cpu::reference::kGemmKernels;
  std::mt19937 rng(13);
  for (const GemmKernels* g : vector_levels()) {
    for (const X16Layout& l : kLayouts) {
      for (int64_t nb : {1, 2}) {
        for (int64_t n_groups : {2, 3, 5}) {
          std::vector<std::vector<uint8_t>> groups;
          std::vector<uint8_t> all;
          for (int64_t i = 0; i < n_groups; ++i) {
            groups.push_back(weights(l, nb, int(i % 4), rng));
            all.insert(all.end(), groups.back().begin(), groups.back().end());
          }
          for (int64_t n : {1, 2, 3, 9}) {
            const std::vector<float> x = activations(n, nb * l.block, int(n % 2), rng);
            const std::vector<float> got = run(*g, l, all, nb, x, n, n_groups);
            for (int64_t i = 0; i < n_groups; ++i) {
              const std::vector<float> want = run(ref, l, groups[size_t(i)], nb, x, n);
              std::vector<float> mine;
              for (int64_t c = 0; c < n; ++c) {
                const auto* row = got.data() + c * n_groups * kGroupRows + i * kGroupRows;
                mine.insert(mine.end(), row, row + kGroupRows);
              }
              expect_same_bits(mine, want,
                               level_name(g) + " " + std::string(dtype_name(l.type)) +
                                   " nb " + std::to_string(nb) + " group " + std::to_string(i) + " of " +
                                   std::to_string(n_groups) + " columns " + std::to_string(n));
              if (HasFatalFailure()) return;
            }
          }
        }
      }
    }
  }
}

TEST(GemmX16Test, F16MatchesReferenceToTheBit) {
  const GemmKernels& ref = cpu::reference::kGemmKernels;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const GemmKernels* g : vector_levels()) {
    // Odd lengths leave one element to the even chain; past 256 elements and 120 columns
    // the AVX2 prompt kernel works in K-blocks and column blocks.
    for (int64_t k : {1, 2, 3, 8, 17, 64, 129, 256, 257, 600}) {
      std::vector<uint16_t> w(static_cast<size_t>(k * kGroupRows));
      for (uint16_t& h : w) h = f32_to_f16(dist(rng));
      for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 47, 48, 49, 100, 120, 121, 250}) {
        std::vector<float> x(static_cast<size_t>(n * k));
        for (float& v : x) v = dist(rng);
        expect_same_bits(run_f16(*g, w, k, x, n), run_f16(ref, w, k, x, n),
                         level_name(g) + " F16 k " + std::to_string(k) +
                             " columns " + std::to_string(n));
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Table g's outputs for n_groups groups in one call (run(table, w, k, x, n_cols, n_groups))
// against the reference's for each group alone.
template <typename X, typename Run>
void expect_groups_match_reference(const GemmKernels& g, const std::vector<uint16_t>& w, int64_t k,
                                   const std::vector<X>& x, int64_t n, int64_t n_groups, Run run,
                                   const std::string& what) {
  const std::vector<float> got = run(g, w, k, x, n, n_groups);
  for (int64_t i = 0; i < n_groups; ++i) {
    const std::vector<uint16_t> one(w.begin() + i * k * kGroupRows, w.begin() + (i + 1) * k * kGroupRows);
    const std::vector<float> want = run(cpu::reference::kGemmKernels, one, k, x, n, 1);
    std::vector<float> mine;
    for (int64_t c = 0; c < n; ++c) {
      const float* row = got.data() + c * n_groups * kGroupRows + i * kGroupRows;
      mine.insert(mine.end(), row, row + kGroupRows);
    }
    expect_same_bits(mine, want, what + " group " + std::to_string(i) + " of " + std::to_string(n_groups));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Several F16 groups per call (the AVX-512 tile takes two at a time, an odd last one
// alone): every output is the reference's for its group alone.
TEST(GemmX16Test, F16SeveralGroupsPerCallMatchOneGroupOfTheReference) {
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const GemmKernels* g : vector_levels()) {
    for (int64_t n_groups : {2, 3, 5}) {
      for (int64_t k : {1, 6, 257}) {
        std::vector<uint16_t> w(static_cast<size_t>(n_groups * k * kGroupRows));
        for (uint16_t& h : w) h = f32_to_f16(dist(rng));
        for (int64_t n : {1, 2, 5, 6, 7, 13, 121}) {
          std::vector<float> x(static_cast<size_t>(n * k));
          for (float& v : x) v = dist(rng);
          expect_groups_match_reference(*g, w, k, x, n, n_groups, run_f16,
                                        level_name(g) + " F16 k " + std::to_string(k) + " columns " + std::to_string(n));
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// A bfloat16 of pattern: 0 normal (N(0,1)), 1 tiny (products and sums in the denormal
// range, some inputs denormal themselves), 2 magnitudes 2^-40..2^40 (sums that cancel
// and round), 3 zeros of both signs among +-1 and +-2^-100 values.
uint16_t bf16_of(int pattern, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  float v = normal(rng);
  switch (pattern) {
    case 1:
      v *= std::ldexp(1.0f, -62 - int(rng() % 4));
      if (rng() % 8 == 0) return uint16_t((rng() & 0x807F) | 1);  // a denormal bf16
      break;
    case 2:
      v = std::ldexp(v, int(rng() % 81) - 40);
      break;
    case 3: {
      const float values[] = {0.0f, -0.0f, 1.0f, -1.0f, std::ldexp(1.0f, -100), -std::ldexp(1.0f, -100)};
      v = values[rng() % 6];
      break;
    }
    default:
      break;
  }
  return f32_to_bf16(v);
}

// n_groups groups (w holds them back to back) in one call: outputs [n_cols][16 * n_groups].
std::vector<float> run_bf16(const GemmKernels& g, const std::vector<uint16_t>& w, int64_t k,
                            const std::vector<uint16_t>& x, int64_t n_cols, int64_t n_groups = 1) {
  const size_t stride = size_t(n_groups * kGroupRows);
  std::vector<float> out(static_cast<size_t>(n_cols) * stride);
  g.gemm_bf16_x16(w.data(), n_groups, k, x.data(), size_t(k), n_cols, out.data(), stride);
  return out;
}

// BF16_X16 holds pairs, so k is even; odd pair counts leave a pair to the first chain,
// and past 256 elements and 120 columns the AVX2 prompt kernel works in K-blocks and
// column blocks. Also the vdpbf16ps semantics the reference states: for these bits the
// AVX-512 level is the instruction itself.
TEST(GemmX16Test, BF16MatchesReferenceToTheBit) {
  const GemmKernels& ref = cpu::reference::kGemmKernels;
  std::mt19937 rng(17);
  for (const GemmKernels* g : vector_levels()) {
    for (int pattern = 0; pattern < 4; ++pattern) {
      for (int64_t k : {2, 4, 6, 18, 130, 256, 258, 600}) {
        std::vector<uint16_t> w(static_cast<size_t>(k * kGroupRows));
        for (uint16_t& h : w) h = bf16_of(pattern, rng);
        for (int64_t n : {1, 2, 3, 4, 5, 7, 11, 12, 13, 25, 120, 121, 250}) {
          if (k > 256 && n > 13 && n != 121) continue;  // the long cases once
          std::vector<uint16_t> x(static_cast<size_t>(n * k));
          for (uint16_t& h : x) h = bf16_of(pattern, rng);
          expect_same_bits(run_bf16(*g, w, k, x, n), run_bf16(ref, w, k, x, n),
                           level_name(g) + " BF16 pattern " + std::to_string(pattern) + " k " +
                               std::to_string(k) + " columns " + std::to_string(n));
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// Several groups per call (the AVX-512 tile takes two at a time, an odd last one alone):
// every output is the reference's for its group alone.
TEST(GemmX16Test, BF16SeveralGroupsPerCallMatchOneGroupOfTheReference) {
  std::mt19937 rng(19);
  for (const GemmKernels* g : vector_levels()) {
    for (int64_t n_groups : {2, 3, 5}) {
      for (int64_t k : {2, 6, 258}) {
        std::vector<uint16_t> w(static_cast<size_t>(n_groups * k * kGroupRows));
        for (uint16_t& h : w) h = bf16_of(int(rng() % 3), rng);
        for (int64_t n : {1, 2, 5, 6, 7, 13, 121}) {
          std::vector<uint16_t> x(static_cast<size_t>(n * k));
          for (uint16_t& h : x) h = bf16_of(0, rng);
          expect_groups_match_reference(*g, w, k, x, n, n_groups, run_bf16,
                                        level_name(g) + " BF16 k " + std::to_string(k) + " columns " + std::to_string(n));
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// The flush the contract states is there: a product below FLT_MIN adds nothing, and a
// denormal weight counts as zero (without them both outputs would be non-zero).
TEST(GemmX16Test, BF16FlushesDenormalsAsVdpbf16ps) {
  std::vector<uint16_t> w(2 * kGroupRows), x = {f32_to_bf16(std::ldexp(1.0f, -70)), f32_to_bf16(1.0f)};
  for (int r = 0; r < kGroupRows; ++r) {
    w[size_t(2 * r)] = f32_to_bf16(std::ldexp(1.0f, -70));  // times x[0]: 2^-140, denormal
    w[size_t(2 * r + 1)] = 0x0001;                          // a denormal weight times x[1]
  }
  std::vector<const GemmKernels*> levels = vector_levels();
  levels.push_back(&cpu::reference::kGemmKernels);
  for (const GemmKernels* g : levels) {
    for (float v : run_bf16(*g, w, 2, x, 1)) EXPECT_EQ(v, 0.0f) << level_name(g);
  }
}

}  // namespace
}  // namespace tessera::test
