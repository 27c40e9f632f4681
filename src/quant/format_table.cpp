// The table of quantized formats and the row helpers built on it.
#include <array>

#include "core/check.h"
#include "quant/iq_quantize.h"
#include "quant/quant.h"

namespace tessera::quant {
namespace {

constexpr Format kFormats[] = {
    {DType::Q4_0, DType::Q8_0, quantize_q4_0, dequantize_q4_0, vec_dot_q4_0_q8_0,
     quantize_q4_0_weighted},
    {DType::Q4_1, DType::Q8_1, quantize_q4_1, dequantize_q4_1, vec_dot_q4_1_q8_1,
     quantize_q4_1_weighted},
    {DType::Q5_0, DType::Q8_0, quantize_q5_0, dequantize_q5_0, vec_dot_q5_0_q8_0,
     quantize_q5_0_weighted},
    {DType::Q5_1, DType::Q8_1, quantize_q5_1, dequantize_q5_1, vec_dot_q5_1_q8_1,
     quantize_q5_1_weighted},
    {DType::Q8_0, DType::Q8_0, quantize_q8_0, dequantize_q8_0, vec_dot_q8_0_q8_0},
    {DType::Q8_1, DType::Q8_1, quantize_q8_1, dequantize_q8_1, vec_dot_q8_1_q8_1},
    {DType::Q2_K, DType::Q8_K, quantize_q2_K, dequantize_q2_K, vec_dot_q2_K_q8_K,
     quantize_q2_K_weighted},
    {DType::Q3_K, DType::Q8_K, quantize_q3_K, dequantize_q3_K, vec_dot_q3_K_q8_K,
     quantize_q3_K_weighted},
    {DType::Q4_K, DType::Q8_K, quantize_q4_K, dequantize_q4_K, vec_dot_q4_K_q8_K,
     quantize_q4_K_weighted},
    {DType::Q5_K, DType::Q8_K, quantize_q5_K, dequantize_q5_K, vec_dot_q5_K_q8_K,
     quantize_q5_K_weighted},
    {DType::Q6_K, DType::Q8_K, quantize_q6_K, dequantize_q6_K, vec_dot_q6_K_q8_K,
     quantize_q6_K_weighted},
    {DType::Q8_K, DType::Q8_K, quantize_q8_K, dequantize_q8_K, vec_dot_q8_K_q8_K},
    {DType::IQ3_XXS, DType::Q8_K, quantize_iq3_xxs, dequantize_iq3_xxs, vec_dot_iq3_xxs_q8_K,
     quantize_iq3_xxs_weighted},
    {DType::IQ3_S, DType::Q8_K, quantize_iq3_s, dequantize_iq3_s, vec_dot_iq3_s_q8_K,
     quantize_iq3_s_weighted},
    {DType::IQ1_S, DType::Q8_K, quantize_iq1_s, dequantize_iq1_s, vec_dot_iq1_s_q8_K,
     quantize_iq1_s_weighted, true},
    {DType::IQ1_M, DType::Q8_K, quantize_iq1_m, dequantize_iq1_m, vec_dot_iq1_m_q8_K,
     quantize_iq1_m_weighted, true},
    {DType::IQ2_XXS, DType::Q8_K, quantize_iq2_xxs, dequantize_iq2_xxs, vec_dot_iq2_xxs_q8_K,
     quantize_iq2_xxs_weighted, true},
    {DType::IQ2_XS, DType::Q8_K, quantize_iq2_xs, dequantize_iq2_xs, vec_dot_iq2_xs_q8_K,
     quantize_iq2_xs_weighted, true},
    {DType::IQ2_S, DType::Q8_K, quantize_iq2_s, dequantize_iq2_s, vec_dot_iq2_s_q8_K,
     quantize_iq2_s_weighted, true},
    {DType::IQ4_NL, DType::Q8_0, quantize_iq4_nl, dequantize_iq4_nl, vec_dot_iq4_nl_q8_0,
     quantize_iq4_nl_weighted, false},
    {DType::IQ4_XS, DType::Q8_K, quantize_iq4_xs, dequantize_iq4_xs, vec_dot_iq4_xs_q8_K,
     quantize_iq4_xs_weighted, false},
    {DType::TQ1_0, DType::Q8_K, quantize_tq1_0, dequantize_tq1_0, vec_dot_tq1_0_q8_K},
    {DType::TQ2_0, DType::Q8_K, quantize_tq2_0, dequantize_tq2_0, vec_dot_tq2_0_q8_K},
};

}  // namespace

const Format* format(DType t) {
  for (const Format& f : kFormats) {
    if (f.type == t) return &f;
  }
  return nullptr;
}

size_t quantize_rows(DType t, const float* src, void* dst, int64_t n_rows, int64_t n_per_row,
                     const float* importance) {
  const Format* f = format(t);
  TESSERA_CHECK_MSG(f != nullptr, "quantize_rows: not a quantized type");
  TESSERA_CHECK_MSG(importance != nullptr || !f->needs_importance,
                    "quantize_rows: this type needs importance weights");
  const bool weighted = importance != nullptr && f->quantize_weighted != nullptr;
  TESSERA_CHECK_MSG(weighted || f->quantize != nullptr,
                    "quantize_rows: this type can be read but not written");
  const size_t row_bytes = dtype_row_size(t, n_per_row);
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t r = 0; r < n_rows; ++r) {
    if (weighted) {
      f->quantize_weighted(src + r * n_per_row, out + size_t(r) * row_bytes, n_per_row, importance);
    } else {
      f->quantize(src + r * n_per_row, out + size_t(r) * row_bytes, n_per_row);
    }
  }
  return size_t(n_rows) * row_bytes;
}

void dequantize_rows(DType t, const void* src, float* dst, int64_t n_rows, int64_t n_per_row) {
  const Format* f = format(t);
  TESSERA_CHECK_MSG(f != nullptr, "dequantize_rows: not a quantized type");
  const size_t row_bytes = dtype_row_size(t, n_per_row);
  const auto* in = static_cast<const uint8_t*>(src);
  for (int64_t r = 0; r < n_rows; ++r) {
    f->dequantize(in + size_t(r) * row_bytes, dst + r * n_per_row, n_per_row);
  }
}

}  // namespace tessera::quant
