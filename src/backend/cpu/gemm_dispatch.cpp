// Hands out the _X16 GEMM table of a vector level (only levels this CPU runs).
#include "backend/cpu/gemm_kernels.h"

#include "core/check.h"
#include "tessera/dtype.h"

namespace tessera::cpu {

GemmX16Fn gemm_x16(const GemmKernels& k, DType x16) {
  switch (x16) {
    case DType::Q4_0_X16:
      return k.gemm_q4_0_x16;
    case DType::Q8_0_X16:
      return k.gemm_q8_0_x16;
    case DType::Q4_K_X16:
      return k.gemm_q4_K_x16;
    case DType::Q6_K_X16:
      return k.gemm_q6_K_x16;
    default:
      TESSERA_CHECK_MSG(false, "not a quantized _X16 type");
      return nullptr;
  }
}

const GemmKernels* gemm_kernels_for(Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  switch (isa) {
    case Isa::Reference:
      return &reference::kGemmKernels;
    case Isa::Avx2:
      return &avx2::kGemmKernels;
    case Isa::Avx512:
      return &avx512::kGemmKernels;
  }
  return nullptr;
}

const GemmKernels& gemm_kernels() {
  const GemmKernels* k = gemm_kernels_for(active_isa());
  return k ? *k : reference::kGemmKernels;
}

bool fast_gemm_available() {
  const GemmKernels* k = gemm_kernels_for(active_isa());
  return k != nullptr && k->isa != Isa::Reference;
}

}  // namespace tessera::cpu
