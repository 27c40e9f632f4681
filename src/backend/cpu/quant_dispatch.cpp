// Hands out the quantized kernel table of a vector level, only for levels this CPU runs;
// the active level is the vector kernels' one (dispatch.cpp).
#include "backend/cpu/quant_kernels.h"
#include "backend/cpu/x86_build.h"

namespace tessera::cpu {

QuantMatmul quant_matmul(const QuantKernels& k, DType t) {
  switch (t) {
    case DType::Q4_0:
      return {DType::Q8_0, k.quantize_q8_0, k.dot_q4_0_q8_0};
    case DType::Q4_1:
      return {DType::Q8_1, k.quantize_q8_1, k.dot_q4_1_q8_1};
    case DType::Q5_0:
      return {DType::Q8_0, k.quantize_q8_0, k.dot_q5_0_q8_0};
    case DType::Q5_1:
      return {DType::Q8_1, k.quantize_q8_1, k.dot_q5_1_q8_1};
    case DType::Q8_0:
      return {DType::Q8_0, k.quantize_q8_0, k.dot_q8_0_q8_0};
    case DType::Q2_K:
      return {DType::Q8_K, k.quantize_q8_K, k.dot_q2_K_q8_K};
    case DType::Q3_K:
      return {DType::Q8_K, k.quantize_q8_K, k.dot_q3_K_q8_K};
    case DType::Q4_K:
      return {DType::Q8_K, k.quantize_q8_K, k.dot_q4_K_q8_K};
    case DType::Q5_K:
      return {DType::Q8_K, k.quantize_q8_K, k.dot_q5_K_q8_K};
    case DType::Q6_K:
      return {DType::Q8_K, k.quantize_q8_K, k.dot_q6_K_q8_K};
    case DType::IQ2_XXS:
      return {DType::Q8_K, k.quantize_q8_K, k.dot_iq2_xxs_q8_K};
    case DType::IQ2_XS:
      return {DType::Q8_K, k.quantize_q8_K, k.dot_iq2_xs_q8_K};
    case DType::IQ2_S:
      return {DType::Q8_K, k.quantize_q8_K, k.dot_iq2_s_q8_K};
    case DType::IQ3_XXS:
      return {DType::Q8_K, k.quantize_q8_K, k.dot_iq3_xxs_q8_K};
    case DType::IQ3_S:
      return {DType::Q8_K, k.quantize_q8_K, k.dot_iq3_s_q8_K};
    case DType::IQ1_S:
      return {DType::Q8_K, k.quantize_q8_K, k.dot_iq1_s_q8_K};
    case DType::IQ1_M:
      return {DType::Q8_K, k.quantize_q8_K, k.dot_iq1_m_q8_K};
    case DType::IQ4_NL:
      return {DType::Q8_0, k.quantize_q8_0, k.dot_iq4_nl_q8_0};
    case DType::IQ4_XS:
      return {DType::Q8_K, k.quantize_q8_K, k.dot_iq4_xs_q8_K};
    case DType::TQ1_0:
      return {DType::Q8_K, k.quantize_q8_K, k.dot_tq1_0_q8_K};
    case DType::TQ2_0:
      return {DType::Q8_K, k.quantize_q8_K, k.dot_tq2_0_q8_K};
    default:
      return {};
  }
}

ToFloatRowFn quant_to_float(const QuantKernels& k, DType t) {
  switch (t) {
    case DType::Q4_0:
      return k.to_float_q4_0;
    case DType::Q4_1:
      return k.to_float_q4_1;
    case DType::Q5_0:
      return k.to_float_q5_0;
    case DType::Q5_1:
      return k.to_float_q5_1;
    case DType::Q8_0:
      return k.to_float_q8_0;
    case DType::IQ4_NL:
      return k.to_float_iq4_nl;
    default:
      return nullptr;
  }
}

const QuantKernels* quant_kernels_for(Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  switch (isa) {
    case Isa::Reference:
      return &reference::kQuantKernels;
    case Isa::Avx2:
      if constexpr (kX86Kernels) return &avx2::kQuantKernels;
      break;
    case Isa::Avx512:
      if constexpr (kX86Kernels) return &avx512::kQuantKernels;
      break;
  }
  return nullptr;
}

const QuantKernels& quant_kernels() { return *quant_kernels_for(active_isa()); }

}  // namespace tessera::cpu
