// Functions written once for the host and the GPU: the F16/BF16 conversions (fp16.h),
// and the CUDA backend's block decoding and 8-bit dot products, which the host compiler
// also builds so that host unit tests check them against src/quant without a GPU
// (tests/unit/cuda_*_test.cpp). Outside nvcc TESSERA_HD is plain `inline`.
#pragma once

#if defined(__CUDACC__)
#define TESSERA_HD __host__ __device__ __forceinline__
#else
#define TESSERA_HD inline
#endif
