// The entry functions of the op table, one group per op family's .cu file.
#pragma once

#include "backend/cuda/common.cuh"

namespace tessera::cuda {

// elementwise.cu: add, mul (src1 broadcast), scale, silu, gelu, relu², clamp; concat.
bool binary_supports(const Tensor* node);
void add_compute(Tensor* node, Ctx& ctx);
void mul_compute(Tensor* node, Ctx& ctx);
bool unary_supports(const Tensor* node);
void scale_compute(Tensor* node, Ctx& ctx);
void silu_compute(Tensor* node, Ctx& ctx);
void gelu_compute(Tensor* node, Ctx& ctx);
void relu_sqr_compute(Tensor* node, Ctx& ctx);
void clamp_compute(Tensor* node, Ctx& ctx);
bool concat_supports(const Tensor* node);
void concat_compute(Tensor* node, Ctx& ctx);

// norm.cu: rms_norm, norm along dim 0.
bool norm_supports(const Tensor* node);
void rms_norm_compute(Tensor* node, Ctx& ctx);
void norm_compute(Tensor* node, Ctx& ctx);

// rope.cu: both modes, partial rotation, frequency divisors, inverse.
bool rope_supports(const Tensor* node);
void rope_compute(Tensor* node, Ctx& ctx);

// softmax.cu: softmax(x * scale + mask) along dim 0.
bool soft_max_supports(const Tensor* node);
void soft_max_compute(Tensor* node, Ctx& ctx);

// copy.cu: cpy/cont between F32, F16 and BF16 (any strides); set_rows into the cache.
bool cpy_supports(const Tensor* node);
bool cont_supports(const Tensor* node);
void copy_compute(Tensor* node, Ctx& ctx);
bool set_rows_supports(const Tensor* node);
void set_rows_compute(Tensor* node, Ctx& ctx);

// get_rows.cu: rows of any GGUF type, dequantized to F32.
bool get_rows_supports(const Tensor* node);
void get_rows_compute(Tensor* node, Ctx& ctx);

// mul_mat.cu: matrix-vector kernels for decode (mmvq.cu: quantized weights on 8-bit
// activations, float weights in F32), cuBLAS for F32/F16/BF16 weights and for quantized
// weights dequantized to F16 for prompts (an int8 GEMM is a later step).
bool mul_mat_supports(const Tensor* node);
void mul_mat_compute(Tensor* node, Ctx& ctx);

// attention.cu: the fused attention op, a flash-attention kernel for prompts and a
// split-over-cells kernel for decode.
bool attention_supports(const Tensor* node);
void attention_compute(Tensor* node, Ctx& ctx);

}  // namespace tessera::cuda
