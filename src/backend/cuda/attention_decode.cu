// The attention kernel for decode (at most kAttnDecodeMaxRows query rows per KV head):
// one block per (split of the cells, KV head), so that a long cache fills the GPU even
// with few heads. Each warp takes every kWarps-th cell of the split: its lanes read the
// cell's K and V rows (coalesced, lane-strided over the head dimension), a warp reduction
// gives each row's score, and each row keeps its own online softmax (max, sum, output
// in registers). The warps' states are then merged, into the result when there is one
// split, else into a partial that attention.cu's reduce kernel combines.
#include "backend/cuda/attention.cuh"

namespace tessera::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename KV, int kD, int kR>
__global__ void __launch_bounds__(kThreads) decode_kernel(AttnArgs a, AttnSlopes sl) {
  constexpr int kPer = kD / 32;  // head elements per lane: d = lane + 32 i
  __shared__ float qs[kR][kD];
  __shared__ float wm[kWarps][kR], wl[kWarps][kR];
  __shared__ float wacc[kWarps][kR][kD];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int hk = blockIdx.y, split = blockIdx.x;
  const int rows = a.rows;  // <= kR
  const int c_begin = split * a.cells_per_split;
  const int c_end = min(a.n_kv, c_begin + a.cells_per_split);
  for (int i = tid; i < kR * kD; i += kThreads) {
    const int r = i / kD;
    qs[r][i % kD] = r < rows ? load_q(a, hk, r, i % kD) : 0.0f;
  }
  __syncthreads();

  float m[kR], l[kR], acc[kR][kPer];
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int i = 0; i < kPer; ++i) acc[r][i] = 0.0f;
  }
  for (int c = c_begin + warp; c < c_end; c += kWarps) {
    const char* kr = a.k + int64_t(c) * a.k_nb1 + int64_t(hk) * a.k_nb2;
    const char* vr = a.v + int64_t(c) * a.v_nb1 + int64_t(hk) * a.v_nb2;
    float kv[kPer], vv[kPer];
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int d = lane + 32 * i;
      kv[i] = d < a.hd ? load_kv<KV>(kr, d) : 0.0f;
      vv[i] = d < a.hd ? load_kv<KV>(vr, d) : 0.0f;
    }
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      if (r >= rows) break;  // uniform over the warp
      float part = 0.0f;
#pragma unroll
      for (int i = 0; i < kPer; ++i) part += qs[r][lane + 32 * i] * kv[i];
      const float s = warp_sum(part) + mask_term(a, sl, row_token(a, r), row_head(a, hk, r), c);
      const float m_new = fmaxf(m[r], s);
      if (m_new == -INFINITY) continue;  // nothing seen yet
      const float alpha = expf(m[r] - m_new);
      const float p = expf(s - m_new);
      l[r] = l[r] * alpha + p;
#pragma unroll
      for (int i = 0; i < kPer; ++i) acc[r][i] = acc[r][i] * alpha + p * vv[i];
      m[r] = m_new;
    }
  }

#pragma unroll
  for (int r = 0; r < kR; ++r) {
    if (lane == 0) {
      wm[warp][r] = m[r];
      wl[warp][r] = l[r];
    }
#pragma unroll
    for (int i = 0; i < kPer; ++i) wacc[warp][r][lane + 32 * i] = acc[r][i];
  }
  __syncthreads();
  for (int i = tid; i < rows * a.hd; i += kThreads) {
    const int r = i / a.hd, d = i % a.hd;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, wm[w][r]);
    float sum = 0.0f, out = 0.0f;
    if (mx != -INFINITY) {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const float e = wm[w][r] == -INFINITY ? 0.0f : expf(wm[w][r] - mx);
        sum += wl[w][r] * e;
        out += wacc[w][r][d] * e;
      }
    }
    store_row(a, hk, split, r, mx, sum, d, out);
  }
}

template <typename KV, int kD>
void launch(const AttnArgs& a, const AttnSlopes& sl, const AttnPlan& p, Ctx& ctx) {
  const dim3 grid(unsigned(p.splits), unsigned(a.n_head_kv));
  switch (p.rows_cap) {
    case 1:
      decode_kernel<KV, kD, 1><<<grid, kThreads, 0, ctx.stream>>>(a, sl);
      break;
    case 2:
      decode_kernel<KV, kD, 2><<<grid, kThreads, 0, ctx.stream>>>(a, sl);
      break;
    case 4:
      decode_kernel<KV, kD, 4><<<grid, kThreads, 0, ctx.stream>>>(a, sl);
      break;
    default:
      decode_kernel<KV, kD, 8><<<grid, kThreads, 0, ctx.stream>>>(a, sl);
      break;
  }
  TESSERA_CUDA_LAUNCHED();
}

}  // namespace

template <typename KV>
void launch_attn_decode(const AttnArgs& a, const AttnSlopes& sl, const AttnPlan& p, Ctx& ctx) {
  static_assert(kAttnDecodeMaxRows == 8, "decode_kernel is instantiated for 1, 2, 4 and 8 rows");
  switch (p.bucket) {
    case 64:
      return launch<KV, 64>(a, sl, p, ctx);
    case 128:
      return launch<KV, 128>(a, sl, p, ctx);
    default:
      return launch<KV, 256>(a, sl, p, ctx);
  }
}

template void launch_attn_decode<float>(const AttnArgs&, const AttnSlopes&, const AttnPlan&, Ctx&);
template void launch_attn_decode<__half>(const AttnArgs&, const AttnSlopes&, const AttnPlan&, Ctx&);

}  // namespace tessera::cuda
