// Hands out the attention kernel table of a vector level (only levels this CPU runs).
#include "backend/cpu/attn_kernels.h"

namespace tessera::cpu {

const AttnKernels* attn_kernels_for(Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  switch (isa) {
    case Isa::Reference:
      return &reference::kAttnKernels;
    case Isa::Avx2:
      return &avx2::kAttnKernels;
    case Isa::Avx512:
      return &avx512::kAttnKernels;
  }
  return nullptr;
}

const AttnKernels& attn_kernels() {
  const AttnKernels* k = attn_kernels_for(active_isa());
  return k ? *k : reference::kAttnKernels;
}

}  // namespace tessera::cpu
