// rope: rotary position embedding of F32 rows (one head of one token each), normal and
// NeoX pairing, partial rotation (n_dims < ne0 passes the rest through), optional F32
// per-pair frequency divisors (src2) and the inverse rotation. The angles are computed in
// double and rounded once, and the rotation rounds each product, as the CPU does.
#include <climits>
#include <variant>

#include "backend/cuda/elementwise_math.h"
#include "backend/cuda/ops.cuh"

namespace tessera::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxRotated = 8192;  // n_dims: cos and sin of every pair fit in shared memory

struct RopeArgs {
  int n_dims;
  bool neox;
  bool inverse;
  float freq_base;
  float freq_scale;
  int heads_per_block;
};

// Element i (linear, dim 0 fastest) of an I32 tensor of any layout.
__device__ __forceinline__ int32_t read_i32(const char* base, const Dims& d, int64_t i) {
  int64_t off = 0;
  for (int k = 0; k < 4; ++k) {
    off += (i % d.ne[k]) * d.nb[k];
    i /= d.ne[k];
  }
  return *reinterpret_cast<const int32_t*>(base + off);
}

// Rotates heads [h0, h0 + heads_per_block) of token (blockIdx.x, blockIdx.z): the cos/sin
// of each pair go to shared memory first. Grid: (ne2, head groups, ne3), kThreads threads.
// Each element is read and written by one thread, so y may alias x.
__global__ void rope_kernel(char* y, Dims dy, const char* x, Dims dx, const char* pos, Dims dp,
                            const float* factors, RopeArgs a) {
  extern __shared__ float cs[];  // cos[half], then sin[half]
  const int half = a.n_dims / 2;
  const int64_t i2 = blockIdx.x;
  const int64_t i3 = blockIdx.z;
  const int32_t p = read_i32(pos, dp, i2);
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const double theta = math::rope_theta(p, a.freq_base, a.freq_scale, i, a.n_dims,
                                          factors ? factors[i] : 1.0f);
    double s, c;
    sincos(theta, &s, &c);
    cs[i] = float(c);
    cs[half + i] = a.inverse ? -float(s) : float(s);
  }
  __syncthreads();

  const int64_t h0 = int64_t(blockIdx.y) * a.heads_per_block;
  const int64_t left = dy.ne[1] - h0;
  const int nh = int(left < a.heads_per_block ? left : a.heads_per_block);
  const int ne0 = int(dy.ne[0]);
  const int64_t xs = dx.nb[0] / 4;
  const char* xt = x + i2 * dx.nb[2] + i3 * dx.nb[3];
  char* yt = y + i2 * dy.nb[2] + i3 * dy.nb[3];
  for (int k = threadIdx.x; k < nh * half; k += blockDim.x) {
    const int64_t h = h0 + k / half;
    const int i = k % half;
    const float* xr = reinterpret_cast<const float*>(xt + h * dx.nb[1]);
    float* yr = reinterpret_cast<float*>(yt + h * dy.nb[1]);
    const int j0 = a.neox ? i : 2 * i;
    const int j1 = a.neox ? i + half : 2 * i + 1;
    float y0, y1;
    math::rope_rotate(xr[j0 * xs], xr[j1 * xs], cs[i], cs[half + i], &y0, &y1);
    yr[j0] = y0;
    yr[j1] = y1;
  }
  const int rest = ne0 - a.n_dims;
  for (int k = threadIdx.x; k < nh * rest; k += blockDim.x) {
    const int64_t h = h0 + k / rest;
    const int i = a.n_dims + k % rest;
    const float* xr = reinterpret_cast<const float*>(xt + h * dx.nb[1]);
    reinterpret_cast<float*>(yt + h * dy.nb[1])[i] = xr[i * xs];
  }
}

// Heads one block rotates: about kThreads pair rotations or pass-through copies.
int64_t heads_per_block(const Tensor* node, int n_dims) {
  const int64_t half = n_dims / 2;
  const int64_t rest = node->ne[0] - n_dims;
  int64_t per_head = half > rest ? half : rest;
  per_head = per_head < 1 ? 1 : per_head;
  const int64_t heads = kThreads / per_head;
  return heads < 1 ? 1 : (heads > node->ne[1] ? node->ne[1] : heads);
}

}  // namespace

bool rope_supports(const Tensor* node) {
  const Tensor* a = node->src[0];
  const Tensor* pos = node->src[1];
  const Tensor* ff = node->src[2];
  const auto* rp = std::get_if<RopeParams>(&node->params);
  if (rp == nullptr || (rp->mode != RopeMode::Normal && rp->mode != RopeMode::NeoX)) return false;
  if (!rp->yarn.plain()) return false;  // YaRN and the attention factor: the CPU's
  if (rp->n_dims < 0 || rp->n_dims % 2 != 0 || rp->n_dims > node->ne[0] || rp->n_dims > kMaxRotated)
    return false;
  if (node->type != DType::F32 || node->nb[0] != 4 || !aligned(node, 4)) return false;
  if (node->ne[0] > INT_MAX || node->ne[1] > INT_MAX || node->ne[2] > INT_MAX ||
      node->ne[3] > 65535)
    return false;
  if (a == nullptr || a->type != DType::F32 || !aligned(a, 4) || a->ne != node->ne) return false;
  if (pos == nullptr || pos->type != DType::I32 || !aligned(pos, 4) || pos->nelements() < node->ne[2])
    return false;
  if (ff != nullptr && (ff->type != DType::F32 || !ff->is_contiguous() ||
                        ff->nelements() < rp->n_dims / 2))
    return false;
  if (node->ne[1] == 0) return true;
  const int64_t heads = heads_per_block(node, rp->n_dims);
  return (node->ne[1] + heads - 1) / heads <= 65535;
}

void rope_compute(Tensor* node, Ctx& ctx) {
  const RopeParams rp = std::get<RopeParams>(node->params);
  if (node->nelements() == 0) return;
  const int64_t heads = heads_per_block(node, rp.n_dims);
  const int64_t groups = (node->ne[1] + heads - 1) / heads;
  const RopeArgs args{rp.n_dims, rp.mode == RopeMode::NeoX, rp.inverse, rp.freq_base,
                      rp.freq_scale, int(heads)};
  const Tensor* ff = node->src[2];
  const dim3 grid(unsigned(node->ne[2]), unsigned(groups), unsigned(node->ne[3]));
  rope_kernel<<<grid, kThreads, size_t(rp.n_dims) * sizeof(float), ctx.stream>>>(
      static_cast<char*>(node->data), dims_of(node), static_cast<const char*>(node->src[0]->data),
      dims_of(node->src[0]), static_cast<const char*>(node->src[1]->data), dims_of(node->src[1]),
      ff ? static_cast<const float*>(ff->data) : nullptr, args);
  TESSERA_CUDA_LAUNCHED();
}

}  // namespace tessera::cuda
