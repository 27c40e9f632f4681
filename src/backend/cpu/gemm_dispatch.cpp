// Hands out the _X16 GEMM table of a vector level (only levels this CPU runs), and for
// the AVX2 level its AVX-VNNI variant where the CPU has that.
#include "backend/cpu/gemm_kernels.h"
#include "backend/cpu/x86_build.h"

#if TESSERA_X86_KERNELS
#include <cpuid.h>
#endif
#include <cstdlib>
#include <cstring>

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
    case DType::IQ4_NL_X16:
      return k.gemm_iq4_nl_x16;
    case DType::IQ4_XS_X16:
      return k.gemm_iq4_xs_x16;
    default:
      TESSERA_CHECK_MSG(false, "not a quantized _X16 type");
      return nullptr;
  }
}

namespace {

// AVX-VNNI: cpuid leaf 7, sub-leaf 1, EAX bit 4 (read once: a cpuid instruction exits to
// the hypervisor in a virtual machine, and the tables are looked up per op and thread).
bool cpu_has_avx_vnni() {
#if TESSERA_X86_KERNELS
  static const bool yes = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return isa_supported(Isa::Avx2) && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
  }();
  return yes;
#else
  return false;
#endif
}

bool use_avx_vnni() {
  static const bool yes = [] {
    const char* env = std::getenv("TESSERA_AVX_VNNI");
    return cpu_has_avx_vnni() && !(env != nullptr && std::strcmp(env, "0") == 0);
  }();
  return yes;
}

}  // namespace

const GemmKernels* gemm_kernels_avx2(bool vnni) {
  if constexpr (kX86Kernels) {
    if (vnni) return cpu_has_avx_vnni() ? &avx2_vnni::kGemmKernels : nullptr;
    return isa_supported(Isa::Avx2) ? &avx2::kGemmKernels : nullptr;
  }
  return nullptr;
}

const GemmKernels* gemm_kernels_for(Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  switch (isa) {
    case Isa::Reference:
      return &reference::kGemmKernels;
    case Isa::Avx2:
      return gemm_kernels_avx2(use_avx_vnni());
    case Isa::Avx512:
      if constexpr (kX86Kernels) return &avx512::kGemmKernels;
      break;
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
