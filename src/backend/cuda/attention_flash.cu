// The attention kernel for prompts: one block per (tile of kBr query rows of one KV head,
// split of the cells), the rows' scaled queries in shared memory, K and V streamed through
// shared memory kBc cells at a time (converted to F32 once per tile), and an online
// softmax: per row the running max m and sum l, the output rescaled by exp(m_old - m_new)
// as the max grows. Cells outside the range some row of the tile can see (by the mask)
// are never loaded: a causal prompt skips its upper triangle. F32 arithmetic on CUDA
// cores; tensor cores are a later step.
#include <climits>

#include "backend/cuda/attention.cuh"

namespace tessera::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <typename KV, int kD, int kBr, int kBc>
__global__ void __launch_bounds__(kThreads) flash_kernel(AttnArgs a, AttnSlopes sl) {
  // Scores: thread (cell sc, row group sg) computes rows sg, sg + kSG, ... of cell sc.
  constexpr int kSG = kThreads / kBc;
  constexpr int kSP = kBr / kSG;
  // P V: thread (column pd, row group pg) owns columns pd + j kDT of rows pg + i kRG.
  constexpr int kDT = kD < kThreads ? kD : kThreads;
  constexpr int kC = kD / kDT;
  constexpr int kRG = kThreads / kDT;
  constexpr int kRP = kBr / kRG;
  static_assert(kThreads % kBc == 0 && kBr % kSG == 0 && kD % kDT == 0 && kBr % kRG == 0);

  __shared__ float qs[kBr][kD];
  __shared__ float ks[kBc][kD + 1];  // padded: the score threads read a column each
  __shared__ float vs[kBc][kD];
  __shared__ float ps[kBr][kBc];  // scores, then probabilities
  __shared__ float row_m[kBr], row_l[kBr], row_alpha[kBr];
  __shared__ int visible[2];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int hk = blockIdx.y;
  const int tile = blockIdx.x / a.splits, split = blockIdx.x % a.splits;
  const int first = tile * kBr;
  const int nrows = min(kBr, a.rows - first);
  int c_begin = split * a.cells_per_split;
  int c_end = min(a.n_kv, c_begin + a.cells_per_split);

  for (int i = tid; i < kBr * kD; i += kThreads) {
    const int r = i / kD;
    qs[r][i % kD] = r < nrows ? load_q(a, hk, first + r, i % kD) : 0.0f;
  }
  if (tid < kBr) {
    row_m[tid] = -INFINITY;
    row_l[tid] = 0.0f;
  }
  if (a.mask != nullptr) {  // [lo, hi): the cells some row of the tile sees
    if (tid == 0) {
      visible[0] = c_end;
      visible[1] = c_begin;
    }
    __syncthreads();
    int lo = c_end, hi = c_begin;
    for (int r = 0; r < nrows; ++r) {
      const int t = row_token(a, first + r);
      if (r > 0 && t == row_token(a, first + r - 1)) continue;
      const float* m = reinterpret_cast<const float*>(a.mask + int64_t(t) * a.mask_nb1);
      for (int c = c_begin + tid; c < c_end; c += kThreads) {
        if (m[c] != -INFINITY) {
          lo = min(lo, c);
          hi = max(hi, c + 1);
        }
      }
    }
    atomicMin(&visible[0], lo);
    atomicMax(&visible[1], hi);
    __syncthreads();
    c_begin = visible[0];
    c_end = visible[1];
  }
  __syncthreads();

  const int sc = tid % kBc, sg = tid / kBc;
  const int pd = tid % kDT, pg = tid / kDT;
  float acc[kRP][kC] = {};
  for (int c0 = c_begin; c0 < c_end; c0 += kBc) {
    const int nc = min(kBc, c_end - c0);
    for (int i = tid; i < kBc * kD; i += kThreads) {
      const int c = i / kD, d = i % kD;
      float kv = 0.0f, vv = 0.0f;
      if (c < nc && d < a.hd) {
        kv = load_kv<KV>(a.k + int64_t(c0 + c) * a.k_nb1 + int64_t(hk) * a.k_nb2, d);
        vv = load_kv<KV>(a.v + int64_t(c0 + c) * a.v_nb1 + int64_t(hk) * a.v_nb2, d);
      }
      ks[c][d] = kv;
      vs[c][d] = vv;
    }
    __syncthreads();

    float s[kSP] = {};
    for (int d = 0; d < kD; ++d) {
      const float kd = ks[sc][d];
#pragma unroll
      for (int i = 0; i < kSP; ++i) s[i] += qs[sg + i * kSG][d] * kd;
    }
#pragma unroll
    for (int i = 0; i < kSP; ++i) {
      const int r = sg + i * kSG;
      float v = -INFINITY;
      if (r < nrows && sc < nc) {
        v = s[i] + mask_term(a, sl, row_token(a, first + r), row_head(a, hk, first + r), c0 + sc);
      }
      ps[r][sc] = v;
    }
    __syncthreads();

    for (int r = warp; r < kBr; r += kWarps) {  // online softmax: a warp per row
      float mx = -INFINITY;
      for (int c = lane; c < kBc; c += 32) mx = fmaxf(mx, ps[r][c]);
      const float m_old = row_m[r];
      const float m_new = fmaxf(m_old, warp_max(mx));
      float sum = 0.0f;
      for (int c = lane; c < kBc; c += 32) {
        const float p = m_new == -INFINITY ? 0.0f : expf(ps[r][c] - m_new);
        ps[r][c] = p;
        sum += p;
      }
      sum = warp_sum(sum);
      if (lane == 0) {
        const float alpha = m_new == -INFINITY ? 1.0f : expf(m_old - m_new);
        row_alpha[r] = alpha;
        row_l[r] = row_l[r] * alpha + sum;
        row_m[r] = m_new;
      }
    }
    __syncthreads();

#pragma unroll
    for (int i = 0; i < kRP; ++i) {
      const float alpha = row_alpha[pg + i * kRG];
#pragma unroll
      for (int j = 0; j < kC; ++j) acc[i][j] *= alpha;
    }
    for (int c = 0; c < kBc; ++c) {
#pragma unroll
      for (int j = 0; j < kC; ++j) {
        const float v = vs[c][pd + j * kDT];
#pragma unroll
        for (int i = 0; i < kRP; ++i) acc[i][j] += ps[pg + i * kRG][c] * v;
      }
    }
    __syncthreads();  // the next tile overwrites ks, vs and ps
  }

#pragma unroll
  for (int i = 0; i < kRP; ++i) {
    const int r = pg + i * kRG;
    if (r >= nrows) continue;
#pragma unroll
    for (int j = 0; j < kC; ++j) {
      const int d = pd + j * kDT;
      if (d < a.hd) store_row(a, hk, split, first + r, row_m[r], row_l[r], d, acc[i][j]);
    }
  }
}

template <typename KV, int kD>
void launch(const AttnArgs& a, const AttnSlopes& sl, const AttnPlan& p, Ctx& ctx) {
  constexpr FlashTile t = flash_tile(kD);
  const dim3 grid(unsigned(p.tiles * p.splits), unsigned(a.n_head_kv));
  flash_kernel<KV, kD, t.br, t.bc><<<grid, kThreads, 0, ctx.stream>>>(a, sl);
  TESSERA_CUDA_LAUNCHED();
}

}  // namespace

template <typename KV>
void launch_attn_flash(const AttnArgs& a, const AttnSlopes& sl, const AttnPlan& p, Ctx& ctx) {
  switch (p.bucket) {
    case 64:
      return launch<KV, 64>(a, sl, p, ctx);
    case 128:
      return launch<KV, 128>(a, sl, p, ctx);
    default:
      return launch<KV, 256>(a, sl, p, ctx);
  }
}

template void launch_attn_flash<float>(const AttnArgs&, const AttnSlopes&, const AttnPlan&, Ctx&);
template void launch_attn_flash<__half>(const AttnArgs&, const AttnSlopes&, const AttnPlan&, Ctx&);

}  // namespace tessera::cuda
