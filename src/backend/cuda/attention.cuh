// What the attention kernels share (attention.cu, attention_flash.cu,
// attention_decode.cu): the op's arguments, the query-row numbering, the score of a row
// and a cell, and the partial results of a split. As on the CPU (ops/attention.cpp):
// query row r of KV head hk is token r / group of query head hk * group + r % group;
// q is multiplied by the scale first (rounded), then s = q.k + mask, with ALiBi's
// slope * mask (a masked -inf staying -inf) in place of mask; a row that sees no cell
// gets zeros.
#pragma once

#include <cmath>
#include <type_traits>

#include "backend/cuda/attention_plan.h"
#include "backend/cuda/common.cuh"

namespace tessera::cuda {

struct AttnArgs {
  const char* q;  // F32: q[d] of token t, head h at q + t * q_nb1 + h * q_nb2 + 4 d
  int64_t q_nb1, q_nb2;
  const char* k;  // F32 or F16: cell c, KV head hk at k + c * k_nb1 + hk * k_nb2 (dense rows)
  const char* v;
  int64_t k_nb1, k_nb2, v_nb1, v_nb2;
  const char* mask;  // null, or F32 row of token t at mask + t * mask_nb1
  int64_t mask_nb1;
  float* out;  // [hd, n_head, n_tokens], contiguous
  int hd, n_tokens, n_head, n_head_kv, group, n_kv;
  int rows;  // query rows per KV head: group * n_tokens
  float scale;
  bool alibi;           // the mask is multiplied by the head's slope (AttnSlopes)
  int splits;           // > 1: partial results to part_ml / part_acc, combined by a reduce kernel
  int cells_per_split;  // cells of split s: [s * cells_per_split, + cells_per_split) within n_kv
  float* part_ml;       // (max, sum) of partial p = (hk * splits + s) * rows + r
  float* part_acc;      // hd unnormalised sums of partial p
};

/// Per query head: ALiBi's factor of the mask (read only when AttnArgs::alibi).
struct AttnSlopes {
  float v[kAttnMaxAlibiHeads];
};

/// The token and the query head of row r of KV head hk.
__device__ __forceinline__ int row_token(const AttnArgs& a, int r) { return r / a.group; }
__device__ __forceinline__ int row_head(const AttnArgs& a, int hk, int r) {
  return hk * a.group + r % a.group;
}

/// q[d] of row r, times the scale; 0 past the head dimension (the kernels' padding).
__device__ __forceinline__ float load_q(const AttnArgs& a, int hk, int r, int d) {
  if (d >= a.hd) return 0.0f;
  const char* p = a.q + int64_t(row_token(a, r)) * a.q_nb1 + int64_t(row_head(a, hk, r)) * a.q_nb2;
  return __fmul_rn(reinterpret_cast<const float*>(p)[d], a.scale);
}

/// Element d of a K or V row as float.
template <typename KV>
__device__ __forceinline__ float load_kv(const char* row, int d) {
  if constexpr (std::is_same_v<KV, float>) {
    return reinterpret_cast<const float*>(row)[d];
  } else {
    return __half2float(reinterpret_cast<const __half*>(row)[d]);
  }
}

/// The mask term of row r (token t, query head h) at cell c: 0 without a mask.
__device__ __forceinline__ float mask_term(const AttnArgs& a, const AttnSlopes& sl, int t, int h,
                                           int c) {
  if (a.mask == nullptr) return 0.0f;
  const float m = reinterpret_cast<const float*>(a.mask + int64_t(t) * a.mask_nb1)[c];
  if (!a.alibi) return m;
  return m == -INFINITY ? -INFINITY : __fmul_rn(sl.v[h], m);
}

/// Writes element d of row r of KV head hk in split s: normalised into out when there is
/// one split, else the partial (max m, sum l, unnormalised acc).
__device__ __forceinline__ void store_row(const AttnArgs& a, int hk, int s, int r, float m, float l,
                                          int d, float acc) {
  if (a.splits == 1) {
    float* o = a.out + (int64_t(row_token(a, r)) * a.n_head + row_head(a, hk, r)) * a.hd;
    o[d] = l > 0.0f ? acc / l : 0.0f;
    return;
  }
  const int64_t p = (int64_t(hk) * a.splits + s) * a.rows + r;
  a.part_acc[p * a.hd + d] = acc;
  if (d == 0) {
    a.part_ml[2 * p] = m;
    a.part_ml[2 * p + 1] = l;
  }
}

/// The flash kernel (attention_flash.cu) for KV type KV (float or __half), head bucket
/// `bucket`: grid (tiles * splits, n_head_kv).
template <typename KV>
void launch_attn_flash(const AttnArgs& a, const AttnSlopes& sl, const AttnPlan& p, Ctx& ctx);

/// The decode kernel (attention_decode.cu): grid (splits, n_head_kv).
template <typename KV>
void launch_attn_decode(const AttnArgs& a, const AttnSlopes& sl, const AttnPlan& p, Ctx& ctx);

}  // namespace tessera::cuda
