// The reference level of the quantized kernels: the scalar code of src/quant itself.
#include "backend/cpu/quant_kernels.h"
#include "quant/quant.h"

namespace tessera::cpu::reference {

const QuantKernels kQuantKernels = {
    .isa = Isa::Reference,
    .quantize_q8_0 = quant::quantize_q8_0,
    .quantize_q8_1 = quant::quantize_q8_1,
    .quantize_q8_K = quant::quantize_q8_K,
    .dot_q4_0_q8_0 = quant::vec_dot_q4_0_q8_0,
    .dot_q4_1_q8_1 = quant::vec_dot_q4_1_q8_1,
    .dot_q5_0_q8_0 = quant::vec_dot_q5_0_q8_0,
    .dot_q5_1_q8_1 = quant::vec_dot_q5_1_q8_1,
    .dot_q8_0_q8_0 = quant::vec_dot_q8_0_q8_0,
    .dot_q2_K_q8_K = quant::vec_dot_q2_K_q8_K,
    .dot_q3_K_q8_K = quant::vec_dot_q3_K_q8_K,
    .dot_q4_K_q8_K = quant::vec_dot_q4_K_q8_K,
    .dot_q5_K_q8_K = quant::vec_dot_q5_K_q8_K,
    .dot_q6_K_q8_K = quant::vec_dot_q6_K_q8_K,
    .dot_iq2_xxs_q8_K = quant::vec_dot_iq2_xxs_q8_K,
    .dot_iq2_xs_q8_K = quant::vec_dot_iq2_xs_q8_K,
    .dot_iq2_s_q8_K = quant::vec_dot_iq2_s_q8_K,
    .dot_iq3_xxs_q8_K = quant::vec_dot_iq3_xxs_q8_K,
    .dot_iq3_s_q8_K = quant::vec_dot_iq3_s_q8_K,
    .dot_iq1_s_q8_K = quant::vec_dot_iq1_s_q8_K,
    .dot_iq1_m_q8_K = quant::vec_dot_iq1_m_q8_K,
    .dot_iq4_nl_q8_0 = quant::vec_dot_iq4_nl_q8_0,
    .dot_iq4_xs_q8_K = quant::vec_dot_iq4_xs_q8_K,
    .dot_tq1_0_q8_K = quant::vec_dot_tq1_0_q8_K,
    .dot_tq2_0_q8_K = quant::vec_dot_tq2_0_q8_K,
    .to_float_q4_0 = quant::dequantize_q4_0,
    .to_float_q4_1 = quant::dequantize_q4_1,
    .to_float_q5_0 = quant::dequantize_q5_0,
    .to_float_q5_1 = quant::dequantize_q5_1,
    .to_float_q8_0 = quant::dequantize_q8_0,
    .to_float_iq4_nl = quant::dequantize_iq4_nl,
};

}  // namespace tessera::cpu::reference
