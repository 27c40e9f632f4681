// Picks the vector kernel level once, from cpuid (and TESSERA_CPU_ISA), and hands out
// per-level tables only for levels this CPU runs.
#include <atomic>
#include <cstdlib>
#include <string>

#include "backend/cpu/vec.h"
#include "backend/cpu/x86_build.h"
#if TESSERA_X86_KERNELS
#include <cpuid.h>
#endif
#include "tessera/log.h"

namespace tessera::cpu {
namespace {

#if TESSERA_X86_KERNELS
// F16C from cpuid leaf 1 (ECX bit 29): clang's __builtin_cpu_supports has no "f16c".
// The OS's saving of the AVX state is checked by the "avx2" test beside it.
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
#endif

// Both answers are computed once: the kernel tables are looked up per op and thread, and
// in a virtual machine each cpuid instruction exits to the hypervisor (asked anew each
// time, a measurable share of a decode: docs/performance.md, "Kernel history").
bool cpu_has_avx2() {
#if TESSERA_X86_KERNELS
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
  return yes;
#else
  return false;
#endif
}

// The AVX-512 file is compiled with every flag below, so all of them must be present.
bool cpu_has_avx512() {
#if TESSERA_X86_KERNELS
  static const bool yes = cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
                          __builtin_cpu_supports("avx512bf16");
  return yes;
#else
  return false;
#endif
}

const VecKernels* best_supported() {
  if constexpr (kX86Kernels) {
    if (cpu_has_avx512()) return &avx512::kKernels;
    if (cpu_has_avx2()) return &avx2::kKernels;
  }
  return &reference::kKernels;
}

// TESSERA_CPU_ISA=reference|avx2|avx512 forces a level the CPU supports.
const VecKernels* choose() {
  const char* env = std::getenv("TESSERA_CPU_ISA");
  if (env && *env) {
    const std::string want = env;
    for (Isa isa : {Isa::Reference, Isa::Avx2, Isa::Avx512}) {
      if (want != isa_name(isa)) continue;
      if (const VecKernels* k = vec_kernels_for(isa)) return k;
      tessera::log(LogLevel::Warn,
                   "TESSERA_CPU_ISA=%s: not supported by this CPU; using the best level", env);
      return best_supported();
    }
    tessera::log(LogLevel::Warn, "TESSERA_CPU_ISA=%s: unknown level (reference, avx2, avx512)",
                 env);
  }
  return best_supported();
}

std::atomic<const VecKernels*>& active() {
  static std::atomic<const VecKernels*> kernels{choose()};
  return kernels;
}

}  // namespace

const VecKernels& vec_kernels() { return *active().load(std::memory_order_relaxed); }

Isa active_isa() { return vec_kernels().isa; }

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::Reference:
      return true;
    case Isa::Avx2:
      return cpu_has_avx2();
    case Isa::Avx512:
      return cpu_has_avx512();
  }
  return false;
}

const VecKernels* vec_kernels_for(Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  switch (isa) {
    case Isa::Reference:
      return &reference::kKernels;
    case Isa::Avx2:
      if constexpr (kX86Kernels) return &avx2::kKernels;
      break;
    case Isa::Avx512:
      if constexpr (kX86Kernels) return &avx512::kKernels;
      break;
  }
  return nullptr;
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::Reference:
      return "reference";
    case Isa::Avx2:
      return "avx2";
    case Isa::Avx512:
      return "avx512";
  }
  return "?";
}

bool set_active_isa(Isa isa) {
  const VecKernels* k = vec_kernels_for(isa);
  if (!k) return false;
  active().store(k, std::memory_order_relaxed);
  return true;
}

}  // namespace tessera::cpu
