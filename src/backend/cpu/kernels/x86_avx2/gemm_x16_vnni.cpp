// The AVX2 _X16 GEMMs again, compiled with -mavxvnni (CMakeLists.txt): where
// gemm_x16.cpp sees __AVXVNNI__ its integer sums are vpdpbusd instead of vpmaddubsw /
// vpmaddwd, in namespace avx2_vnni. gemm_dispatch.cpp hands this table out for the AVX2
// level on CPUs with AVX-VNNI (TESSERA_AVX_VNNI=0: the plain AVX2 one).
#include "backend/cpu/kernels/x86_avx2/gemm_x16.cpp"
