// mul_mat: result[m, n] = dot(src0 row m, src1 row n), src1 F32, src0 planes broadcast
// over src1's dims 2-3 (plane (i2, i3) reads weight plane (i2 / r2, i3 / r3)); the result
// F32 [src0.ne1, src1.ne1, src1.ne2, src1.ne3], contiguous. The path by weight type and
// column count is mul_mat_plan.h's:
//  - few columns (decode): the matrix-vector kernels of mmvq.cu, on 8-bit activations
//    for quantized weights;
//  - F32/F16/BF16 weights, many columns: cuBLAS GEMM, F32 accumulation. F16 and BF16
//    weights multiply activations converted to the weight's type (cuBLAS has no mixed
//    F16 x F32 GEMM): activations beyond the F16 range become infinite there;
//  - quantized weights, many columns: weight rows dequantized to F16 in scratch, a chunk
//    at a time, then cuBLAS with F16 activations. (An int8 tensor-core GEMM on the 8-bit
//    activations, without the F16 copy, is not built yet.)
// Activations with any strides (multiples of 4 bytes) are read in place by the vector
// kernels and copied densely into scratch (converted to the GEMM's type) for cuBLAS when
// their layout is not one cuBLAS takes: the node never has to stay on the CPU for it.
#include <algorithm>
#include <climits>
#include <type_traits>

#include "backend/cuda/dequant.h"
#include "backend/cuda/mmv.cuh"
#include "backend/cuda/mul_mat_plan.h"
#include "backend/cuda/ops.cuh"

namespace tessera::cuda {
namespace {

constexpr int kThreads = 256;

// A GEMM operand: planes of column-major matrices (columns = the tensor's rows).
struct Operand {
  const void* p;
  cudaDataType_t type;
  int64_t elem;    // bytes per element
  int64_t ld;      // elements between rows
  int64_t s2, s3;  // elements between planes of dims 2 and 3
};

cudaDataType_t cuda_type(DType t) {
  return t == DType::F32 ? CUDA_R_32F : t == DType::F16 ? CUDA_R_16F : CUDA_R_16BF;
}

int64_t type_bytes(DType t) { return t == DType::F32 ? 4 : 2; }

// A tensor as a GEMM operand, when its layout allows it (dense rows, strides in whole
// elements, rows at least k elements apart).
bool operand_of(const Tensor* t, Operand* o) {
  const int64_t e = type_bytes(t->type);
  if (int64_t(t->nb[0]) != e) return false;
  for (int i = 1; i < 4; ++i) {
    if (int64_t(t->nb[i]) % e != 0) return false;
  }
  if (t->view_src != nullptr && int64_t(t->view_offset) % e != 0) return false;
  *o = {t->data,
        cuda_type(t->type),
        e,
        int64_t(t->nb[1]) / e,
        int64_t(t->nb[2]) / e,
        int64_t(t->nb[3]) / e};
  return o->ld >= t->ne[0] && o->ld <= INT_MAX;
}

template <typename O>
__device__ __forceinline__ O convert(float v) {
  if constexpr (std::is_same_v<O, float>) {
    return v;
  } else if constexpr (std::is_same_v<O, __half>) {
    return __float2half_rn(v);
  } else {
    return __float2bfloat16_rn(v);
  }
}

// Row blockIdx.x of x (rows numbered i1 fastest) into row blockIdx.x of a dense [k, rows] of O.
template <typename O>
__global__ void pack_kernel(const char* x, Dims dx, O* out) {
  const int64_t r = blockIdx.x;
  const int64_t i1 = r % dx.ne[1], i23 = r / dx.ne[1];
  const char* row = x + i1 * dx.nb[1] + (i23 % dx.ne[2]) * dx.nb[2] + (i23 / dx.ne[2]) * dx.nb[3];
  const int64_t k = dx.ne[0];
  O* o = out + r * k;
  for (int64_t i = threadIdx.x; i < k; i += blockDim.x)
    o[i] = convert<O>(*reinterpret_cast<const float*>(row + i * dx.nb[0]));
}

// src1 as a GEMM operand of type `to`: in place when it is F32 in a layout cuBLAS takes,
// else a dense converted copy in scratch.
Operand activations(const Tensor* b, DType to, Ctx& ctx) {
  Operand o{};
  if (to == DType::F32 && operand_of(b, &o)) return o;
  const int64_t k = b->ne[0], rows = b->nrows();
  void* out = ctx.take<char>(size_t(k * rows * type_bytes(to)));
  const unsigned grid = unsigned(rows);
  const auto* x = static_cast<const char*>(b->data);
  if (to == DType::F32) {
    pack_kernel<float><<<grid, kThreads, 0, ctx.stream>>>(x, dims_of(b), static_cast<float*>(out));
  } else if (to == DType::F16) {
    pack_kernel<__half>
        <<<grid, kThreads, 0, ctx.stream>>>(x, dims_of(b), static_cast<__half*>(out));
  } else {
    pack_kernel<__nv_bfloat16>
        <<<grid, kThreads, 0, ctx.stream>>>(x, dims_of(b), static_cast<__nv_bfloat16*>(out));
  }
  TESSERA_CUDA_LAUNCHED();
  return {out, cuda_type(to), type_bytes(to), k, k * b->ne[1], k * b->ne[1] * b->ne[2]};
}

// C (column-major m x n, columns ldc apart) = A^T B for A k x m, B k x n: `batch`
// planes, strided.
void gemm(Ctx& ctx, int64_t m, int64_t n, int64_t k, const Operand& a, const void* pa, int64_t sa,
          const Operand& b, const void* pb, int64_t sb, float* c, int64_t ldc, int64_t sc,
          int64_t batch) {
  const float one = 1.0f, zero = 0.0f;
  TESSERA_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(m), int(n), int(k), &one, pa, a.type, int(a.ld), sa,
      pb, b.type, int(b.ld), sb, &zero, c, CUDA_R_32F, int(ldc), sc, int(batch), CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT));
}

const char* at(const Operand& o, int64_t i2, int64_t i3) {
  return static_cast<const char*>(o.p) + (i2 * o.s2 + i3 * o.s3) * o.elem;
}

// Float weights: one strided-batched GEMM per dim-3 plane when dim 2 is not broadcast,
// else one GEMM per result plane.
void gemm_float(Tensor* node, Ctx& ctx) {
  const Tensor* a = node->src[0];
  const Tensor* b = node->src[1];
  Operand wa{};
  operand_of(a, &wa);  // supports checked it
  const Operand xb = activations(b, a->type, ctx);
  const int64_t m = a->ne[1], n = b->ne[1], k = a->ne[0];
  const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
  float* out = static_cast<float*>(node->data);
  const int64_t plane = m * n;
  for (int64_t i3 = 0; i3 < b->ne[3]; ++i3) {
    float* c3 = out + i3 * b->ne[2] * plane;
    if (r2 == 1) {
      gemm(ctx, m, n, k, wa, at(wa, 0, i3 / r3), wa.s2, xb, at(xb, 0, i3), xb.s2, c3, m, plane,
           b->ne[2]);
      continue;
    }
    for (int64_t i2 = 0; i2 < b->ne[2]; ++i2) {
      gemm(ctx, m, n, k, wa, at(wa, i2 / r2, i3 / r3), 0, xb, at(xb, i2, i3), 0, c3 + i2 * plane, m,
           0, 1);
    }
  }
}

// Weight rows [r0, r0 + blockIdx.x) of one plane to dense F16 rows of k elements.
template <DType T>
__global__ void dequant_f16_kernel(const char* w, int64_t nb1, int64_t k, __half* out) {
  const auto* row = reinterpret_cast<const uint8_t*>(w + int64_t(blockIdx.x) * nb1);
  __half* o = out + int64_t(blockIdx.x) * k;
  for (int64_t i = threadIdx.x; i < k; i += blockDim.x)
    o[i] = __float2half_rn(dq::decode_row<T>(row, i));
}

// Quantized weights, many columns: per weight plane, chunks of rows dequantized into one
// scratch buffer (stream order keeps a chunk until its GEMMs have read it), each chunk
// multiplied with every activation plane that reads its weight plane.
void gemm_dequant(Tensor* node, Ctx& ctx) {
  const Tensor* a = node->src[0];
  const Tensor* b = node->src[1];
  const Operand xb = activations(b, DType::F16, ctx);
  const int64_t m = a->ne[1], n = b->ne[1], k = a->ne[0];
  const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
  const int64_t chunk = dequant_chunk_rows(m, k);
  __half* wbuf = ctx.take<__half>(size_t(chunk * k));
  const Operand wa{wbuf, CUDA_R_16F, 2, k, 0, 0};
  float* out = static_cast<float*>(node->data);
  const int64_t plane = m * n;
  for (int64_t a3 = 0; a3 < a->ne[3]; ++a3) {
    for (int64_t a2 = 0; a2 < a->ne[2]; ++a2) {
      const char* wp = static_cast<const char*>(a->data) + a2 * a->nb[2] + a3 * a->nb[3];
      for (int64_t r0 = 0; r0 < m; r0 += chunk) {
        const int64_t rows = std::min(chunk, m - r0);
        dq::with_quant_type(a->type, [&]<DType T>() {
          dequant_f16_kernel<T>
              <<<unsigned(rows), kThreads, 0, ctx.stream>>>(wp + r0 * a->nb[1], a->nb[1], k, wbuf);
          TESSERA_CUDA_LAUNCHED();
        });
        for (int64_t i3 = a3 * r3; i3 < (a3 + 1) * r3; ++i3) {
          float* c3 = out + (i3 * b->ne[2] + a2 * r2) * plane + r0;
          gemm(ctx, rows, n, k, wa, wbuf, 0, xb, at(xb, a2 * r2, i3), xb.s2, c3, m, plane, r2);
        }
      }
    }
  }
}

bool fits_int(const Tensor* t) {
  for (int64_t n : t->ne) {
    if (n < 0 || n > INT_MAX) return false;
  }
  return true;
}

}  // namespace

bool mul_mat_supports(const Tensor* node) {
  const Tensor* a = node->src[0];
  const Tensor* b = node->src[1];
  if (a == nullptr || b == nullptr || node->type != DType::F32 || !node->is_contiguous())
    return false;
  if (b->type != DType::F32 || !aligned(b, 4) || !fits_int(a) || !fits_int(b) ||
      a->ne[0] != b->ne[0])
    return false;
  if (a->ne[2] == 0 || a->ne[3] == 0 || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0)
    return false;
  if (b->ne[2] * b->ne[3] > 65535) return false;  // grid dimension y of the vector kernels
  switch (mat_path(a->type, b->ne[1])) {
    case MatPath::FloatVec:
    case MatPath::Cublas: {
      Operand o{};
      return operand_of(a, &o);
    }
    case MatPath::QuantVec:
    case MatPath::DequantCublas:
      // Dense rows of blocks at even addresses (the dot kernels load 16-bit halves).
      return a->nb[0] == dtype_traits(a->type).type_size && aligned(a, 2);
    case MatPath::Refuse:
      return false;
  }
  return false;
}

void mul_mat_compute(Tensor* node, Ctx& ctx) {
  if (node->nelements() == 0) return;
  const Tensor* a = node->src[0];
  const Tensor* b = node->src[1];
  if (a->ne[0] == 0) {  // empty dot products
    TESSERA_CUDA_CHECK(cudaMemsetAsync(node->data, 0, node->nbytes(), ctx.stream));
    return;
  }
  switch (mat_path(a->type, b->ne[1])) {
    case MatPath::FloatVec:
      return mmv_float(node, ctx);
    case MatPath::QuantVec:
      return mmvq(node, quantize_activations(b, ctx), ctx);
    case MatPath::Cublas:
      return gemm_float(node, ctx);
    case MatPath::DequantCublas:
      return gemm_dequant(node, ctx);
    case MatPath::Refuse:
      break;
  }
}

}  // namespace tessera::cuda
