// The AVX2 IQ4_NL_X16 / IQ4_XS_X16 GEMMs again, compiled with -mavxvnni (CMakeLists.txt,
// cmake/cpu_kernels.cmake), as gemm_x16_vnni.cpp does for the other layouts: where
// gemm_x16_iq4.cpp sees __AVXVNNI__ its integer sums are vpdpbusd, in namespace avx2_vnni.
#include "backend/cpu/kernels/x86_avx2/gemm_x16_iq4.cpp"
