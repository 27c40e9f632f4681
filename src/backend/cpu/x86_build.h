#pragma once
// Whether this build holds the x86 kernel files (kernels/x86_avx2, kernels/x86_avx512).
// cmake/cpu_kernels.cmake defines TESSERA_X86_KERNELS (0 or 1) for the dispatch files,
// the only ones that may name the x86 tables. Without them every level but the reference
// one is unsupported, and the x86 tables are named only in discarded `if constexpr`
// branches (no definition needed).
#ifndef TESSERA_X86_KERNELS
#error "TESSERA_X86_KERNELS is defined by cmake/cpu_kernels.cmake, for the dispatch files only"
#endif

namespace tessera::cpu {

inline constexpr bool kX86Kernels = TESSERA_X86_KERNELS != 0;

}  // namespace tessera::cpu
