// Elementwise ops on F32: add and mul (src1 broadcast over src0), scale, silu, gelu,
// relu², clamp, and concat. Every input may be a strided view; results have dense dim 0
// (as the CPU's supports) but rows at any stride. One block per result row.
#include <climits>
#include <variant>

#include "backend/cuda/elementwise_math.h"
#include "backend/cuda/ops.cuh"

namespace tessera::cuda {
namespace {

constexpr int kMaxThreads = 256;

// Element counts a kernel indexes with int (dim 0) and a grid of one block per row.
// F32 with byte strides that keep every element 4-byte aligned.
bool f32_aligned(const Tensor* t) {
  if (t->type != DType::F32) return false;
  for (size_t s : t->nb) {
    if (s % sizeof(float) != 0) return false;
  }
  return t->view_src == nullptr || t->view_offset % sizeof(float) == 0;  // data: allocations are aligned
}

// The result: F32 with dense dim 0 (rows may be strided), indexable here.
bool result_ok(const Tensor* node) {
  return f32_aligned(node) && node->nb[0] == sizeof(float) && fits_grid(node);
}

// Threads per block for rows of ne0 elements: a multiple of the warp, at most 256.
int threads_for(int64_t ne0) {
  const int64_t t = (ne0 + 31) / 32 * 32;
  return int(t < 32 ? 32 : (t > kMaxThreads ? kMaxThreads : t));
}

__device__ __forceinline__ const float* at(const char* base, const Dims& d, int64_t i0, int64_t i1,
                                           int64_t i2, int64_t i3) {
  return reinterpret_cast<const float*>(base + i0 * d.nb[0] + i1 * d.nb[1] + i2 * d.nb[2] +
                                        i3 * d.nb[3]);
}

// Coordinates (i1, i2, i3) of row r of a tensor of shape ne.
struct RowIdx {
  int64_t i1, i2, i3;
};
__device__ __forceinline__ RowIdx row_idx(const Dims& d, int64_t r) {
  const int64_t i23 = r / d.ne[1];
  return {r % d.ne[1], i23 % d.ne[2], i23 / d.ne[2]};
}

// y = a + b or a * b, b's element (i0 % ne10, i1 % ne11, ...); grid: one block per y row.
template <bool kMul>
__global__ void binary_kernel(char* y, Dims dy, const char* a, Dims da, const char* b, Dims db) {
  const RowIdx r = row_idx(dy, blockIdx.x);
  const int ne0 = int(dy.ne[0]);
  const int ne10 = int(db.ne[0]);
  float* yr = const_cast<float*>(at(y, dy, 0, r.i1, r.i2, r.i3));
  const float* ar = at(a, da, 0, r.i1, r.i2, r.i3);
  const char* br = reinterpret_cast<const char*>(
      at(b, db, 0, r.i1 % db.ne[1], r.i2 % db.ne[2], r.i3 % db.ne[3]));
  const int64_t as = da.nb[0] / int64_t(sizeof(float));
  for (int i = threadIdx.x; i < ne0; i += blockDim.x) {
    const int j = ne10 == ne0 ? i : i % ne10;
    const float x = ar[i * as];
    const float w = *reinterpret_cast<const float*>(br + j * db.nb[0]);
    yr[i] = kMul ? x * w : x + w;
  }
}

template <bool kMul>
void binary_launch(Tensor* node, Ctx& ctx) {
  const Dims dy = dims_of(node);
  const int64_t rows = node->nrows();
  if (rows == 0 || node->ne[0] == 0) return;
  binary_kernel<kMul><<<unsigned(rows), threads_for(node->ne[0]), 0, ctx.stream>>>(
      static_cast<char*>(node->data), dy, static_cast<const char*>(node->src[0]->data),
      dims_of(node->src[0]), static_cast<const char*>(node->src[1]->data), dims_of(node->src[1]));
  TESSERA_CUDA_LAUNCHED();
}

struct ScaleOp {
  float s;
  __device__ float operator()(float x) const { return x * s; }
};
struct SiluOp {
  __device__ float operator()(float x) const { return math::silu(x); }
};
struct GeluOp {
  __device__ float operator()(float x) const { return math::gelu(x); }
};
struct ReluSqrOp {
  __device__ float operator()(float x) const { return math::relu_sqr(x); }
};
struct ClampOp {
  float lo, hi;
  __device__ float operator()(float x) const { return math::clamp(x, lo, hi); }
};

// y = f(x) elementwise; grid: one block per y row, threads stride over dim 0.
template <typename F>
__global__ void unary_kernel(char* y, Dims dy, const char* x, Dims dx, F f) {
  const RowIdx r = row_idx(dy, blockIdx.x);
  const int ne0 = int(dy.ne[0]);
  float* yr = const_cast<float*>(at(y, dy, 0, r.i1, r.i2, r.i3));
  const float* xr = at(x, dx, 0, r.i1, r.i2, r.i3);
  const int64_t xs = dx.nb[0] / int64_t(sizeof(float));
  for (int i = threadIdx.x; i < ne0; i += blockDim.x) yr[i] = f(xr[i * xs]);
}

template <typename F>
void unary_launch(Tensor* node, Ctx& ctx, F f) {
  const int64_t rows = node->nrows();
  if (rows == 0 || node->ne[0] == 0) return;
  unary_kernel<F><<<unsigned(rows), threads_for(node->ne[0]), 0, ctx.stream>>>(
      static_cast<char*>(node->data), dims_of(node),
      static_cast<const char*>(node->src[0]->data), dims_of(node->src[0]), f);
  TESSERA_CUDA_LAUNCHED();
}

// y = a and b joined along dim (a first); split = a.ne[dim]; grid: one block per y row.
__global__ void concat_kernel(char* y, Dims dy, const char* a, Dims da, const char* b, Dims db,
                              int dim, int64_t split) {
  const RowIdx r = row_idx(dy, blockIdx.x);
  const int ne0 = int(dy.ne[0]);
  float* yr = const_cast<float*>(at(y, dy, 0, r.i1, r.i2, r.i3));
  int64_t c1 = r.i1, c2 = r.i2, c3 = r.i3;
  const bool row_from_b = (dim == 1 && c1 >= split) || (dim == 2 && c2 >= split) ||
                          (dim == 3 && c3 >= split);
  if (row_from_b) {
    c1 -= dim == 1 ? split : 0;
    c2 -= dim == 2 ? split : 0;
    c3 -= dim == 3 ? split : 0;
  }
  for (int i = threadIdx.x; i < ne0; i += blockDim.x) {
    if (dim == 0) {
      yr[i] = i < split ? *at(a, da, i, c1, c2, c3) : *at(b, db, i - split, c1, c2, c3);
    } else {
      yr[i] = row_from_b ? *at(b, db, i, c1, c2, c3) : *at(a, da, i, c1, c2, c3);
    }
  }
}

}  // namespace

bool binary_supports(const Tensor* node) {
  const Tensor* a = node->src[0];
  const Tensor* b = node->src[1];
  if (!result_ok(node) || a == nullptr || b == nullptr) return false;
  if (!f32_aligned(a) || !f32_aligned(b) || a->ne != node->ne) return false;
  for (size_t i = 0; i < size_t(kMaxDims); ++i) {
    if (b->ne[i] <= 0 ? node->ne[i] != 0 : node->ne[i] % b->ne[i] != 0) return false;
  }
  return fits_grid(b);
}

void add_compute(Tensor* node, Ctx& ctx) { binary_launch<false>(node, ctx); }
void mul_compute(Tensor* node, Ctx& ctx) { binary_launch<true>(node, ctx); }

bool unary_supports(const Tensor* node) {
  const Tensor* a = node->src[0];
  return result_ok(node) && a != nullptr && f32_aligned(a) && a->ne == node->ne;
}

void scale_compute(Tensor* node, Ctx& ctx) {
  unary_launch(node, ctx, ScaleOp{std::get<ScaleParams>(node->params).scale});
}
void silu_compute(Tensor* node, Ctx& ctx) { unary_launch(node, ctx, SiluOp{}); }
void gelu_compute(Tensor* node, Ctx& ctx) { unary_launch(node, ctx, GeluOp{}); }
void relu_sqr_compute(Tensor* node, Ctx& ctx) { unary_launch(node, ctx, ReluSqrOp{}); }
void clamp_compute(Tensor* node, Ctx& ctx) {
  const ClampParams c = std::get<ClampParams>(node->params);
  unary_launch(node, ctx, ClampOp{c.lo, c.hi});
}

bool concat_supports(const Tensor* node) {
  const Tensor* a = node->src[0];
  const Tensor* b = node->src[1];
  if (!result_ok(node) || a == nullptr || b == nullptr || !f32_aligned(a) || !f32_aligned(b))
    return false;
  const int dim = std::get<ConcatParams>(node->params).dim;
  if (dim < 0 || dim >= kMaxDims) return false;
  for (size_t i = 0; i < size_t(kMaxDims); ++i) {
    const bool ok = int(i) == dim ? a->ne[i] + b->ne[i] == node->ne[i]
                                  : a->ne[i] == node->ne[i] && b->ne[i] == node->ne[i];
    if (!ok) return false;
  }
  return true;
}

void concat_compute(Tensor* node, Ctx& ctx) {
  const int dim = std::get<ConcatParams>(node->params).dim;
  const int64_t rows = node->nrows();
  if (rows == 0 || node->ne[0] == 0) return;
  const Tensor* a = node->src[0];
  concat_kernel<<<unsigned(rows), threads_for(node->ne[0]), 0, ctx.stream>>>(
      static_cast<char*>(node->data), dims_of(node), static_cast<const char*>(a->data), dims_of(a),
      static_cast<const char*>(node->src[1]->data), dims_of(node->src[1]), dim,
      a->ne[size_t(dim)]);
  TESSERA_CUDA_LAUNCHED();
}

}  // namespace tessera::cuda
