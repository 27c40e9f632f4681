// Functions that run on the GPU and, compiled by the host compiler, in host unit tests:
// the block formats' decoding and the 8-bit dot products are checked against the
// reference quantizers of src/quant without a GPU (tests/unit/cuda_*_test.cpp).
#pragma once

#if defined(__CUDACC__)
#define TESSERA_HD __host__ __device__ __forceinline__
#else
#define TESSERA_HD inline
#endif
