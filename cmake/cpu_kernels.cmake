# The CPU backend's per-ISA kernels (src/backend/cpu/kernels/x86_avx2, x86_avx512): each
# file gets its level's target flags and is called only after a cpuid check in the
# dispatch files. TESSERA_X86_KERNELS (on by default on x86-64 only) leaves them out: the
# dispatch files then hand out the portable kernels of kernels/reference alone.
#
# Sets source properties only: the x86 kernel files stay in the library's source list and
# are marked HEADER_FILE_ONLY (not compiled) when the option is off, and the dispatch
# files get TESSERA_X86_KERNELS=0|1 (src/backend/cpu/x86_build.h).

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|x86-64)$")
  set(TESSERA_X86_64 ON)
else()
  set(TESSERA_X86_64 OFF)
endif()
option(TESSERA_X86_KERNELS "Build the AVX2 / AVX-512 CPU kernels (x86-64 only)" ${TESSERA_X86_64})
if(TESSERA_X86_KERNELS AND NOT TESSERA_X86_64)
  message(FATAL_ERROR "TESSERA_X86_KERNELS needs an x86-64 target; CMAKE_SYSTEM_PROCESSOR is "
                      "'${CMAKE_SYSTEM_PROCESSOR}' (configure with -DTESSERA_X86_KERNELS=OFF)")
endif()

set(TESSERA_CPU_DIR ${CMAKE_SOURCE_DIR}/src/backend/cpu)
file(GLOB TESSERA_AVX2_SOURCES CONFIGURE_DEPENDS ${TESSERA_CPU_DIR}/kernels/x86_avx2/*.cpp)
file(GLOB TESSERA_AVX512_SOURCES CONFIGURE_DEPENDS ${TESSERA_CPU_DIR}/kernels/x86_avx512/*.cpp)
set(TESSERA_CPU_DISPATCH_SOURCES ${TESSERA_CPU_DIR}/dispatch.cpp ${TESSERA_CPU_DIR}/gemm_dispatch.cpp
                                 ${TESSERA_CPU_DIR}/quant_dispatch.cpp ${TESSERA_CPU_DIR}/attn_dispatch.cpp)

if(TESSERA_X86_KERNELS)
  set_source_files_properties(${TESSERA_AVX2_SOURCES} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
  # The AVX-VNNI variant of the AVX2 GEMMs (the same source with vpdpbusd).
  set_source_files_properties(${TESSERA_CPU_DIR}/kernels/x86_avx2/gemm_x16_vnni.cpp PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavxvnni")
  set_source_files_properties(${TESSERA_CPU_DIR}/kernels/x86_avx2/gemm_x16_iq4_vnni.cpp PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavxvnni")
  set_source_files_properties(${TESSERA_AVX512_SOURCES} PROPERTIES
    COMPILE_OPTIONS "-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mavx512vnni;-mavx512bf16;-mfma;-mf16c")
  set_property(SOURCE ${TESSERA_CPU_DISPATCH_SOURCES} APPEND PROPERTY COMPILE_DEFINITIONS TESSERA_X86_KERNELS=1)
  # The ternary dots add their per-block products as the reference does, unfused, so
  # that they are bit-identical to it.
  set_property(SOURCE ${TESSERA_CPU_DIR}/kernels/x86_avx2/quant_dot_tq.cpp
               ${TESSERA_CPU_DIR}/kernels/x86_avx512/quant_dot_tq.cpp APPEND PROPERTY COMPILE_OPTIONS -ffp-contract=off)
else()
  set_source_files_properties(${TESSERA_AVX2_SOURCES} ${TESSERA_AVX512_SOURCES} PROPERTIES HEADER_FILE_ONLY ON)
  set_property(SOURCE ${TESSERA_CPU_DISPATCH_SOURCES} APPEND PROPERTY COMPILE_DEFINITIONS TESSERA_X86_KERNELS=0)
endif()
