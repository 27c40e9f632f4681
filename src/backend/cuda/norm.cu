// rms_norm and norm along dim 0 of F32 rows: one block per row, a warp-shuffle block
// reduction for the sums. The source may be any strided view; the result has dense dim 0.
#include <climits>
#include <variant>

#include "backend/cuda/ops.cuh"

namespace tessera::cuda {
namespace {

constexpr int kMaxThreads = 256;

int threads_for(int64_t ne0) {
  const int64_t t = (ne0 + 31) / 32 * 32;
  return int(t < 32 ? 32 : (t > kMaxThreads ? kMaxThreads : t));
}

bool f32_aligned(const Tensor* t) {
  if (t->type != DType::F32) return false;
  for (size_t s : t->nb) {
    if (s % sizeof(float) != 0) return false;
  }
  return t->view_src == nullptr || t->view_offset % sizeof(float) == 0;  // data: allocations are aligned
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The sum of v over the block (blockDim.x a multiple of 32), returned to every thread.
__device__ float block_sum(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x >> 5) ? partial[lane] : 0.0f;
    v = warp_sum(v);
    if (lane == 0) partial[0] = v;
  }
  __syncthreads();
  const float total = partial[0];
  __syncthreads();  // partial may be reused by the next call
  return total;
}

struct Rows {
  float* y;
  const float* x;
  int64_t xs;  // x's element stride, in floats
  int n;
};

// The y row and x row of block blockIdx.x.
__device__ __forceinline__ Rows rows_of(char* y, const Dims& dy, const char* x, const Dims& dx) {
  const int64_t r = blockIdx.x;
  const int64_t i1 = r % dy.ne[1];
  const int64_t i23 = r / dy.ne[1];
  const int64_t i2 = i23 % dy.ne[2];
  const int64_t i3 = i23 / dy.ne[2];
  Rows rw;
  rw.y = reinterpret_cast<float*>(y + i1 * dy.nb[1] + i2 * dy.nb[2] + i3 * dy.nb[3]);
  rw.x = reinterpret_cast<const float*>(x + i1 * dx.nb[1] + i2 * dx.nb[2] + i3 * dx.nb[3]);
  rw.xs = dx.nb[0] / int64_t(sizeof(float));
  rw.n = int(dy.ne[0]);
  return rw;
}

// y = x / sqrt(mean(x^2) + eps); grid: one block per row.
__global__ void rms_norm_kernel(char* y, Dims dy, const char* x, Dims dx, float eps) {
  const Rows rw = rows_of(y, dy, x, dx);
  float acc = 0.0f;
  for (int i = threadIdx.x; i < rw.n; i += blockDim.x) {
    const float v = rw.x[i * rw.xs];
    acc += v * v;
  }
  const float mean_sq = block_sum(acc) / float(rw.n);
  const float inv = 1.0f / sqrtf(mean_sq + eps);
  for (int i = threadIdx.x; i < rw.n; i += blockDim.x) rw.y[i] = rw.x[i * rw.xs] * inv;
}

// y = (x - mean) / sqrt(var + eps), population variance in two passes; grid: one block
// per row. Each element is read and written by one thread, so y may alias x.
__global__ void norm_kernel(char* y, Dims dy, const char* x, Dims dx, float eps) {
  const Rows rw = rows_of(y, dy, x, dx);
  float acc = 0.0f;
  for (int i = threadIdx.x; i < rw.n; i += blockDim.x) acc += rw.x[i * rw.xs];
  const float mean = block_sum(acc) / float(rw.n);
  acc = 0.0f;
  for (int i = threadIdx.x; i < rw.n; i += blockDim.x) {
    const float d = rw.x[i * rw.xs] - mean;
    acc += d * d;
  }
  const float var = block_sum(acc) / float(rw.n);
  const float inv = 1.0f / sqrtf(var + eps);
  for (int i = threadIdx.x; i < rw.n; i += blockDim.x) rw.y[i] = (rw.x[i * rw.xs] - mean) * inv;
}

template <typename K>
void launch(K kernel, Tensor* node, Ctx& ctx) {
  const int64_t rows = node->nrows();
  if (rows == 0 || node->ne[0] == 0) return;
  const float eps = std::get<NormParams>(node->params).eps;
  kernel<<<unsigned(rows), threads_for(node->ne[0]), 0, ctx.stream>>>(
      static_cast<char*>(node->data), dims_of(node), static_cast<const char*>(node->src[0]->data),
      dims_of(node->src[0]), eps);
  TESSERA_CUDA_LAUNCHED();
}

}  // namespace

bool norm_supports(const Tensor* node) {
  const Tensor* a = node->src[0];
  return f32_aligned(node) && node->nb[0] == sizeof(float) && fits_grid(node) && a != nullptr &&
         f32_aligned(a) && a->ne == node->ne;
}

void rms_norm_compute(Tensor* node, Ctx& ctx) { launch(rms_norm_kernel, node, ctx); }
void norm_compute(Tensor* node, Ctx& ctx) { launch(norm_kernel, node, ctx); }

}  // namespace tessera::cuda
