// Hands out the attention kernel table of a vector level (only levels this CPU runs).
#include "backend/cpu/attn_kernels.h"
#include "backend/cpu/x86_build.h"

namespace tessera::cpu {

const AttnKernels* attn_kernels_for(Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  switch (isa) {
    case Isa::Reference:
      return &reference::kAttnKernels;
    case Isa::Avx2:
      if constexpr (kX86Kernels) return &avx2::kAttnKernels;
      break;
    case Isa::Avx512:
      if constexpr (kX86Kernels) return &avx512::kAttnKernels;
      break;
  }
  return nullptr;
}

const AttnKernels& attn_kernels() {
  const AttnKernels* k = attn_kernels_for(active_isa());
  return k ? *k : reference::kAttnKernels;
}

}  // namespace tessera::cpu
