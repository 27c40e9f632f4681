// Matrix-vector products for decode (mmv.cuh): a warp per weight row, its lanes taking
// 32-element pieces of the row in turn (consecutive lanes read consecutive blocks, so a
// warp's loads are coalesced), the columns' sums kept in registers, then a warp
// reduction. Quantized weights multiply 8-bit activations with integer dot products
// (q8_dot.h); float weights multiply the F32 activations directly.
#include <climits>

#include "backend/cuda/elementwise_math.h"
#include "backend/cuda/mmv.cuh"
#include "backend/cuda/mul_mat_plan.h"

namespace tessera::cuda {
namespace {

constexpr int kWarps = 4;  // weight rows per block
constexpr int kThreads = 32 * kWarps;

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The multiplication's sizes, and the weight's byte strides.
struct Mat {
  int64_t k, m, n;      // inner size, weight rows, columns per plane
  int64_t ne2, r2, r3;  // result planes along dim 2; broadcast ratios of dims 2 and 3
  int64_t wnb1, wnb2, wnb3;
};

Mat mat_of(const Tensor* node) {
  const Tensor* a = node->src[0];
  const Tensor* b = node->src[1];
  return {a->ne[0],
          a->ne[1],
          b->ne[1],
          b->ne[2],
          b->ne[2] / a->ne[2],
          b->ne[3] / a->ne[3],
          int64_t(a->nb[1]),
          int64_t(a->nb[2]),
          int64_t(a->nb[3])};
}

// Weight row `row` of the weight plane that result plane `plane` reads.
__device__ __forceinline__ const uint8_t* weight_row(const char* w, const Mat& s, int64_t plane,
                                                     int64_t row) {
  const int64_t i2 = plane % s.ne2, i3 = plane / s.ne2;
  return reinterpret_cast<const uint8_t*>(w + (i2 / s.r2) * s.wnb2 + (i3 / s.r3) * s.wnb3 +
                                          row * s.wnb1);
}

// One warp per block of 32 activations: d = max|x| / 127, q = round(x / d), and the
// exact sum of q. Grid: enough warps for every block of every row.
__global__ void quantize_kernel(const char* x, Dims dx, q8::Q8Act* out, int64_t pieces,
                                int64_t total) {
  const int64_t g = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (g >= total) return;  // whole warps: total counts warps
  const int lane = threadIdx.x & 31;
  const int64_t r = g / pieces, p = g % pieces;
  const int64_t i1 = r % dx.ne[1], i23 = r / dx.ne[1];
  const char* row = x + i1 * dx.nb[1] + (i23 % dx.ne[2]) * dx.nb[2] + (i23 / dx.ne[2]) * dx.nb[3];
  const float v = *reinterpret_cast<const float*>(row + (p * q8::kQK + lane) * dx.nb[0]);
  float amax = fabsf(v);
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float d = q8::scale_of(amax);
  const int8_t q = q8::quantize_one(v, q8::inverse(d));
  int sum = q;
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  q8::Q8Act& blk = out[g];
  blk.qs[lane] = q;
  if (lane == 0) {
    blk.d = d;
    blk.sum = sum;
  }
}

// Result rows of weight rows blockIdx.x * kWarps + warp, plane blockIdx.y, every column.
// With several columns the weight piece's loads repeat per column (the compiler may
// merge them; they hit L1 either way).
template <DType T>
__global__ void __launch_bounds__(kThreads)
    mmvq_kernel(const char* w, Mat s, const q8::Q8Act* act, float* out) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (row >= s.m) return;
  const int64_t plane = blockIdx.y;
  const uint8_t* wr = weight_row(w, s, plane, row);
  constexpr int kPer = dq::kQK<T> / q8::kQK;  // pieces per weight block
  const int64_t pieces = s.k / q8::kQK;
  const q8::Q8Act* a = act + plane * s.n * pieces;
  const int n = int(s.n);
  float acc[kMaxVecCols] = {};
  for (int64_t p = lane; p < pieces; p += 32) {
    const uint8_t* blk = wr + (p / kPer) * dq::kBlockBytes<T>;
    const int sub = int(p % kPer);
#pragma unroll
    for (int j = 0; j < kMaxVecCols; ++j) {
      if (j < n) acc[j] += q8::dot_piece<T>(blk, sub, a[j * pieces + p]);
    }
  }
  float* o = out + plane * s.m * s.n + row;
#pragma unroll
  for (int j = 0; j < kMaxVecCols; ++j) {
    if (j >= n) break;
    const float v = warp_sum(acc[j]);
    if (lane == 0) o[j * s.m] = v;
  }
}

enum FloatKind : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

template <int K>
__device__ __forceinline__ float load_w(const uint8_t* row, int64_t i) {
  if constexpr (K == kF32) return reinterpret_cast<const float*>(row)[i];
  if constexpr (K == kF16) return math::f16_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
  return math::bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
}

// As mmvq_kernel for a float weight: lanes take elements in turn (F32 activations read
// at any stride; the element loads of a warp are consecutive).
template <int K>
__global__ void __launch_bounds__(kThreads)
    mmv_float_kernel(const char* w, Mat s, const char* x, Dims dx, float* out) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (row >= s.m) return;
  const int64_t plane = blockIdx.y;
  const uint8_t* wr = weight_row(w, s, plane, row);
  const char* xp = x + (plane % s.ne2) * dx.nb[2] + (plane / s.ne2) * dx.nb[3];
  const int64_t xs = dx.nb[0] / int64_t(sizeof(float));
  const int n = int(s.n);
  float acc[kMaxVecCols] = {};
  for (int64_t i = lane; i < s.k; i += 32) {
    const float wv = load_w<K>(wr, i);
#pragma unroll
    for (int j = 0; j < kMaxVecCols; ++j) {
      if (j < n) acc[j] += wv * reinterpret_cast<const float*>(xp + j * dx.nb[1])[i * xs];
    }
  }
  float* o = out + plane * s.m * s.n + row;
#pragma unroll
  for (int j = 0; j < kMaxVecCols; ++j) {
    if (j >= n) break;
    const float v = warp_sum(acc[j]);
    if (lane == 0) o[j * s.m] = v;
  }
}

dim3 grid_of(const Tensor* node) {
  const Tensor* b = node->src[1];
  return dim3(blocks_for(node->src[0]->ne[1], kWarps), unsigned(b->ne[2] * b->ne[3]));
}

}  // namespace

const q8::Q8Act* quantize_activations(const Tensor* src1, Ctx& ctx) {
  const int64_t pieces = src1->ne[0] / q8::kQK;
  const int64_t total = pieces * src1->nrows();
  q8::Q8Act* out = ctx.take<q8::Q8Act>(size_t(total));
  if (total == 0) return out;
  quantize_kernel<<<blocks_for(total * 32, 256), 256, 0, ctx.stream>>>(
      static_cast<const char*>(src1->data), dims_of(src1), out, pieces, total);
  TESSERA_CUDA_LAUNCHED();
  return out;
}

void mmvq(Tensor* node, const q8::Q8Act* act, Ctx& ctx) {
  const char* w = static_cast<const char*>(node->src[0]->data);
  float* out = static_cast<float*>(node->data);
  const Mat s = mat_of(node);
  const dim3 grid = grid_of(node);
  dq::with_quant_type(node->src[0]->type, [&]<DType T>() {
    mmvq_kernel<T><<<grid, kThreads, 0, ctx.stream>>>(w, s, act, out);
    TESSERA_CUDA_LAUNCHED();
  });
}

void mmv_float(Tensor* node, Ctx& ctx) {
  const Tensor* a = node->src[0];
  const Tensor* b = node->src[1];
  const char* w = static_cast<const char*>(a->data);
  const char* x = static_cast<const char*>(b->data);
  float* out = static_cast<float*>(node->data);
  const Mat s = mat_of(node);
  const dim3 grid = grid_of(node);
  if (a->type == DType::F32) {
    mmv_float_kernel<kF32><<<grid, kThreads, 0, ctx.stream>>>(w, s, x, dims_of(b), out);
  } else if (a->type == DType::F16) {
    mmv_float_kernel<kF16><<<grid, kThreads, 0, ctx.stream>>>(w, s, x, dims_of(b), out);
  } else {
    mmv_float_kernel<kBF16><<<grid, kThreads, 0, ctx.stream>>>(w, s, x, dims_of(b), out);
  }
  TESSERA_CUDA_LAUNCHED();
}

}  // namespace tessera::cuda
