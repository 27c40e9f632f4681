// soft_max: y = softmax(x * scale + mask[i1]) along dim 0 of F32 rows, one block per row.
// The mask (optional, F32 or F16, any strides) has one row per dim-1 index, shared by
// dims 2 and 3, as on the CPU. A row whose every entry is -inf gives zeros.
#include <climits>
#include <cmath>
#include <variant>

#include "backend/cuda/elementwise_math.h"
#include "backend/cuda/ops.cuh"

namespace tessera::cuda {
namespace {

constexpr int kMaxThreads = 256;

int threads_for(int64_t ne0) {
  const int64_t t = (ne0 + 31) / 32 * 32;
  return int(t < 32 ? 32 : (t > kMaxThreads ? kMaxThreads : t));
}

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// The reduction of v over the block (blockDim.x a multiple of 32), given to every thread.
template <typename Op>
__device__ float block_reduce(float v, float identity, Op op) {
  __shared__ float partial[32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x >> 5) ? partial[lane] : identity;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) partial[0] = v;
  }
  __syncthreads();
  const float total = partial[0];
  __syncthreads();  // partial may be reused by the next call
  return total;
}

__device__ __forceinline__ float load_mask(const char* p, bool f16) {
  return f16 ? math::f16_to_f32(*reinterpret_cast<const uint16_t*>(p))
             : *reinterpret_cast<const float*>(p);
}

// One row: y = x * scale (+ mask, each step rounded as on the CPU), then exp(y - max)
// normalised by the reciprocal of its sum. Each element is read and written by one
// thread, so y may alias x. Grid: one block per row.
__global__ void soft_max_kernel(char* y, Dims dy, const char* x, Dims dx, const char* mask,
                                Dims dm, bool mask_f16, float scale) {
  const int64_t r = blockIdx.x;
  const int64_t i1 = r % dy.ne[1];
  const int64_t i23 = r / dy.ne[1];
  const int64_t i2 = i23 % dy.ne[2];
  const int64_t i3 = i23 / dy.ne[2];
  float* yr = reinterpret_cast<float*>(y + i1 * dy.nb[1] + i2 * dy.nb[2] + i3 * dy.nb[3]);
  const float* xr =
      reinterpret_cast<const float*>(x + i1 * dx.nb[1] + i2 * dx.nb[2] + i3 * dx.nb[3]);
  const int64_t xs = dx.nb[0] / int64_t(sizeof(float));
  const char* mr = mask ? mask + i1 * dm.nb[1] : nullptr;
  const int n = int(dy.ne[0]);

  float m = -INFINITY;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float v = __fmul_rn(xr[i * xs], scale);
    if (mr) v = __fadd_rn(v, load_mask(mr + i * dm.nb[0], mask_f16));
    yr[i] = v;
    m = v > m ? v : m;
  }
  m = block_reduce(m, -INFINITY, MaxOp{});
  if (m == -INFINITY) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) yr[i] = 0.0f;
    return;
  }
  float sum = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float e = expf(yr[i] - m);
    yr[i] = e;
    sum += e;
  }
  const float inv = 1.0f / block_reduce(sum, 0.0f, SumOp{});
  for (int i = threadIdx.x; i < n; i += blockDim.x) yr[i] = yr[i] * inv;
}

}  // namespace

bool soft_max_supports(const Tensor* node) {
  const Tensor* a = node->src[0];
  const Tensor* mask = node->src[1];
  if (node->type != DType::F32 || node->nb[0] != sizeof(float) || !aligned(node, 4) ||
      !fits_grid(node))
    return false;
  if (a == nullptr || a->type != DType::F32 || !aligned(a, 4) || a->ne != node->ne) return false;
  if (mask == nullptr) return true;
  const size_t ms = mask->type == DType::F32 ? 4 : (mask->type == DType::F16 ? 2 : 0);
  return ms != 0 && aligned(mask, ms) && mask->ne[0] == node->ne[0] &&
         mask->ne[1] >= node->ne[1] && mask->ne[2] == 1 && mask->ne[3] == 1;
}

void soft_max_compute(Tensor* node, Ctx& ctx) {
  const int64_t rows = node->nrows();
  if (rows == 0 || node->ne[0] == 0) return;
  const Tensor* mask = node->src[1];
  const float scale = std::get<SoftMaxParams>(node->params).scale;
  soft_max_kernel<<<unsigned(rows), threads_for(node->ne[0]), 0, ctx.stream>>>(
      static_cast<char*>(node->data), dims_of(node), static_cast<const char*>(node->src[0]->data),
      dims_of(node->src[0]), mask ? static_cast<const char*>(mask->data) : nullptr,
      mask ? dims_of(mask) : Dims{}, mask != nullptr && mask->type == DType::F16, scale);
  TESSERA_CUDA_LAUNCHED();
}

}  // namespace tessera::cuda
