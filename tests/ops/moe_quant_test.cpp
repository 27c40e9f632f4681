// mul_mat_id with quantized (and F16 / BF16) experts, as the file stores them and
// repacked into the _X16 layouts (backend/cpu/repack.h), on every level and 1-3 threads:
//  - against a double-precision product of the dequantized expert and the unquantized
//    activations, within the bound of quantizing the activations to the weight type's
//    dot partner (the one approximation the engine adds; the same bound as
//    mul_mat_quant_test.cpp; BF16_X16 rounds them to bf16, F16 keeps them);
//  - with repacked experts, every level computes the same bits, as the dense _X16 GEMMs
//    do (each expert's tokens meet its matrix through them). The file-layout dots differ
//    between levels in their summation order, for mul_mat as for mul_mat_id.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/repack.h"
#include "backend/cpu/vec.h"
#include "core/fp16.h"
#include "ops/op_test_util.h"
#include "quant/quant.h"

namespace tessera::test {
namespace {

struct QuantIdCase {
  DType type;
  int64_t k, m, n_expert, n_used, n_tokens;
  bool repack;
};

std::ostream& operator<<(std::ostream& os, const QuantIdCase& c) {
  return os << dtype_name(c.type) << " k " << c.k << " m " << c.m << " experts " << c.n_expert << " used "
            << c.n_used << " tokens " << c.n_tokens << (c.repack ? " repacked" : "");
}

// Per element of x, the bound of |x - x^| when x is quantized to `partner`.
std::vector<double> partner_error_bound(DType partner, const std::vector<float>& x) {
  std::vector<double> bound(x.size());
  const size_t bs = size_t(dtype_traits(partner).block_size);
  for (size_t b = 0; b < x.size(); b += bs) {
    double amax = 0;
    for (size_t e = b; e < b + bs; ++e) amax = std::max(amax, std::fabs(double(x[e])));
    const double d = amax / 127;
    const double stored = partner == DType::Q8_K ? d : double(f16_to_f32(f32_to_f16(float(d))));
    const double e_max = d / 2 * (1 + 1e-6) + 127 * std::fabs(d - stored);
    for (size_t e = b; e < b + bs; ++e) bound[e] = e_max;
  }
  return bound;
}

// Builds and checks case c; returns its one-thread result.
std::vector<double> check_case(const QuantIdCase& c) {
  const bool half = c.type == DType::F16 || c.type == DType::BF16;
  const quant::Format* f = half ? nullptr : quant::format(c.type);
  EXPECT_TRUE(half || f != nullptr);
  OpTest t(11);
  std::mt19937 rng(uint32_t(c.k + 7 * c.m + 13 * c.n_tokens));
  std::normal_distribution<float> dist(0.0f, 0.05f);
  const int64_t rows = c.m * c.n_expert;
  std::vector<float> wf(size_t(rows * c.k));
  for (float& v : wf) v = dist(rng);
  std::vector<uint8_t> weights(dtype_row_size(c.type, c.k) * size_t(rows));
  if (half) {
    for (size_t i = 0; i < wf.size(); ++i) {
      const uint16_t h = c.type == DType::BF16 ? f32_to_bf16(wf[i]) : f32_to_f16(wf[i]);
      std::memcpy(weights.data() + 2 * i, &h, 2);
    }
  } else {
    quant::quantize_rows(c.type, wf.data(), weights.data(), rows, c.k);
  }
  std::vector<uint8_t> repacked;
  Tensor* as = nullptr;
  if (c.repack) {
    repacked.resize(weights.size());
    cpu::repack_rows(c.type, weights.data(), repacked.data(), rows, c.k);
    as = t.graph().arena().new_tensor(cpu::repacked_type(c.type), {c.k, c.m, c.n_expert, 1});
    as->data = repacked.data();
  } else {
    as = t.graph().arena().new_tensor(c.type, {c.k, c.m, c.n_expert, 1});
    as->data = weights.data();
  }
  as->flags |= kFlagInput;
  Tensor* b = t.input(DType::F32, {c.k, c.n_used, c.n_tokens, 1}, Layout::Contiguous, -1, 1);
  std::vector<int32_t> ids;
  for (int64_t tok = 0; tok < c.n_tokens; ++tok) {
    for (int64_t i = 0; i < c.n_used; ++i) ids.push_back(int32_t((tok * 5 + i * 3) % (c.n_expert - 1)));
  }
  Tensor* id = ops::reshape(t.graph(), t.ids(ids), {c.n_used, c.n_tokens, 1, 1});
  Tensor* out = ops::mul_mat_id(t.graph(), as, b, id);

  Expected exact;
  std::vector<float> w(size_t(c.k)), x(size_t(c.k));
  const size_t row_bytes = dtype_row_size(c.type, c.k);
  for (int64_t tok = 0; tok < c.n_tokens; ++tok) {
    for (int64_t i = 0; i < c.n_used; ++i) {
      const int64_t e = ids[size_t(tok * c.n_used + i)];
      for (int64_t q = 0; q < c.k; ++q) x[size_t(q)] = float(t.at(b, q, i, tok));
      std::vector<double> err(x.size(), 0.0);
      if (!half) {
        err = partner_error_bound(f->dot_partner, x);
      } else if (c.type == DType::BF16 && c.repack) {  // rounded to bf16: 2^-9 relative
        for (size_t q = 0; q < x.size(); ++q) err[q] = std::ldexp(std::fabs(double(x[q])), -8);
      }
      for (int64_t o = 0; o < c.m; ++o) {
        const uint8_t* row = weights.data() + size_t(e * c.m + o) * row_bytes;
        if (half) {
          for (size_t q = 0; q < size_t(c.k); ++q) {
            uint16_t h;
            std::memcpy(&h, row + 2 * q, 2);
            w[q] = c.type == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
          }
        } else {
          f->dequantize(row, w.data(), c.k);
        }
        double sum = 0, mag = 0, bound = 0;
        for (size_t q = 0; q < size_t(c.k); ++q) {
          sum += double(w[q]) * double(x[q]);
          mag += std::fabs(double(w[q]) * double(x[q]));
          bound += std::fabs(double(w[q])) * err[q];
        }
        exact.value.push_back(sum);
        exact.mag.push_back(bound + 4e-7 * std::sqrt(double(c.k)) * mag);
      }
    }
  }
  t.check(out, exact, {1.0, 1e-30});
  return t.run(out, 1);
}

class MulMatIdQuantTest : public ::testing::TestWithParam<QuantIdCase> {};

TEST_P(MulMatIdQuantTest, MatchesReferenceOnEveryLevel) {
  const QuantIdCase& c = GetParam();
  const cpu::Isa saved = cpu::active_isa();
  std::vector<std::vector<double>> results;
  for (cpu::Isa isa : {cpu::Isa::Reference, cpu::Isa::Avx2, cpu::Isa::Avx512}) {
    if (!cpu::set_active_isa(isa)) continue;
    SCOPED_TRACE("level " + std::to_string(results.size()));
    results.push_back(check_case(c));
  }
  cpu::set_active_isa(saved);
  if (!c.repack) return;
  for (size_t i = 1; i < results.size(); ++i) {
    ASSERT_EQ(results[i].size(), results[0].size());
    for (size_t e = 0; e < results[0].size(); ++e) {
      ASSERT_EQ(results[i][e], results[0][e]) << "level " << i << " element " << e;
    }
  }
}

// The file's types and their _X16 forms; one token (decode), prompts whose tokens meet
// each expert several times, an expert no token chooses, odd token counts.
const QuantIdCase kCases[] = {
    {DType::Q8_0, 64, 16, 4, 2, 5, false},  {DType::Q8_0, 64, 16, 4, 2, 5, true},
    {DType::Q4_0, 96, 32, 5, 2, 9, false},  {DType::Q4_0, 96, 32, 5, 2, 9, true},
    {DType::Q4_0, 128, 16, 8, 2, 1, true},  {DType::Q8_0, 32, 16, 3, 1, 17, true},
    {DType::Q4_K, 256, 16, 4, 2, 7, false}, {DType::Q4_K, 256, 16, 4, 2, 7, true},
    {DType::Q6_K, 256, 16, 3, 2, 4, false}, {DType::Q6_K, 256, 32, 3, 2, 3, true},
    {DType::Q4_1, 64, 5, 4, 2, 6, false},   {DType::Q5_K, 256, 7, 3, 1, 5, false},
    {DType::F16, 64, 16, 4, 2, 5, true},    {DType::BF16, 64, 16, 4, 2, 5, true},
    {DType::BF16, 96, 32, 5, 2, 9, false},  {DType::BF16, 130, 16, 3, 1, 1, true},
};
INSTANTIATE_TEST_SUITE_P(Cases, MulMatIdQuantTest, ::testing::ValuesIn(kCases));

}  // namespace
}  // namespace tessera::test
