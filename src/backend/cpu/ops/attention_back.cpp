#include "backend/cpu/ops/attention_back.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "backend/cpu/ops/common.h"
#include "backend/cpu/vec.h"

namespace tessera::cpu {
namespace {

constexpr size_t kAlign = 64;
size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
// Bytes of n floats, rounded up so that what follows stays 64-byte aligned.
size_t floats(int64_t n) { return round_up(size_t(n) * sizeof(float)); }

// Query rows per work item of the dq phase (each item transposes its KV head's keys
// unless its thread already has them: a sixteenth of the rows' work at most).
constexpr int64_t kRowTile = 16;
// Cells per work item of the dk/dv phase: small enough that a KV head of a short batch
// still gives every thread items (and a causal mask's uneven columns even out over them),
// large enough that the block's p and ds rows are long dot products.
constexpr int64_t kBlock = 16;

// The query rows of KV head hk are numbered r = t * group + j for token t and query head
// hk * group + j: token-major, so that the rows a causal mask lets see a block of cells
// form one range.
struct Dims {
  int64_t hd, n_tokens, n_head, n_kv, n_head_kv, group, rows;
};

Dims dims_of(const Tensor* node) {
  const Tensor* q = node->src[0];
  const Tensor* k = node->src[1];
  const int64_t group = q->ne[2] / k->ne[2];
  return {q->ne[0], q->ne[1], q->ne[2], k->ne[1], k->ne[2], group, group * q->ne[1]};
}

// What the dq phase leaves the dk/dv phase per query row: the softmax's max and 1 / sum,
// so that p is recomputed bit for bit, D = sum_c p_c dp_c, and the visible cells [lo, hi)
// (empty for a row that sees no cell: it contributes nothing).
struct RowStats {
  float max, inv_sum, d;
  int32_t lo, hi;
};

// Shared scratch: the rows' statistics, then q and d out transposed per KV head
// ([hd][rows]), which turns dk and dv into dot products over rows.
size_t stats_bytes(const Dims& s) {
  return round_up(size_t(s.n_head * s.n_tokens) * sizeof(RowStats));
}
size_t shared_bytes(const Dims& s) {
  return stats_bytes(s) + 2 * floats(s.n_head * s.n_tokens * s.hd);
}

// Per thread. The dq phase: a KV head's keys transposed ([hd][n_kv]), then a row's scores
// (then p), dp (then ds) and the soft cap's slopes. The dk/dv phase: a block's p and ds
// transposed ([kBlock][rows]), then one row's p, dp and slopes over the block.
size_t thread_bytes(const Dims& s) {
  return std::max(floats(s.hd * s.n_kv) + 3 * floats(s.n_kv),
                  2 * floats(kBlock * s.rows) + 3 * floats(kBlock));
}

struct Ctx {
  Dims s;
  const Tensor *q, *k, *v, *mask, *dout;
  float scale, max_bias, softcap;
  float *dq, *dk, *dv;  // the packed result's three parts, contiguous
  RowStats* stats;      // row r of KV head hk at hk * rows + r
  float *qt, *dout_t;   // KV head hk's [hd][rows] at hk * hd * rows
  const VecKernels& vk;

  Ctx(Tensor* node, const KernelParams& p)
      : s(dims_of(node)),
        q(node->src[0]),
        k(node->src[1]),
        v(node->src[2]),
        mask(node->src[3]),
        dout(node->src[4]),
        scale(std::get<AttentionParams>(node->params).scale),
        max_bias(std::get<AttentionParams>(node->params).max_bias),
        softcap(std::get<AttentionParams>(node->params).softcap),
        dq(static_cast<float*>(node->data)),
        dk(dq + s.hd * s.n_tokens * s.n_head),
        dv(dk + s.hd * s.n_kv * s.n_head_kv),
        stats(reinterpret_cast<RowStats*>(align64(p.work))),
        qt(reinterpret_cast<float*>(align64(p.work) + stats_bytes(s))),
        dout_t(qt + floats(s.n_head * s.n_tokens * s.hd) / sizeof(float)),
        vk(vec_kernels()) {}

  const float* row(const Tensor* t, int64_t i1, int64_t i2) const {
    return reinterpret_cast<const float*>(elem_ptr(t, 0, i1, i2, 0));
  }
  int64_t token(int64_t r) const { return r / s.group; }
  int64_t head(int64_t hk, int64_t r) const { return hk * s.group + r % s.group; }
  const float* q_row(int64_t t, int64_t h) const { return row(q, t, h); }
  const float* dout_row(int64_t t, int64_t h) const { return row(dout, h, t); }
  float slope(int64_t h) const { return max_bias > 0 ? alibi_slope(h, s.n_head, max_bias) : 1.0f; }
  float* scratch(const KernelParams& p) const {
    return reinterpret_cast<float*>(align64(p.work) + shared_bytes(s) +
                                    size_t(p.ith) * thread_bytes(s));
  }
};

// out[j] = a . row c0 + j of t's KV head hk, for j < n. dot_f32_x4 gives dot_f32's bits,
// so the grouping by four does not depend on where a range starts.
void dots(const Ctx& x, const float* a, const Tensor* t, int64_t hk, int64_t c0, int64_t n,
          float* out) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const float* rows[4] = {x.row(t, c0 + j, hk), x.row(t, c0 + j + 1, hk),
                            x.row(t, c0 + j + 2, hk), x.row(t, c0 + j + 3, hk)};
    x.vk.dot_f32_x4(a, rows, x.s.hd, out + j);
  }
  for (; j < n; ++j) out[j] = x.vk.dot_f32(a, x.row(t, c0 + j, hk), x.s.hd);
}

// out[i] = a . (b + i * stride) over n floats, for i < count: the long dot products of dq
// (over cells), dk and dv (over rows).
void strided_dots(const Ctx& x, const float* a, const float* b, int64_t stride, int64_t n,
                  int64_t count, float* out) {
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const float* rows[4] = {b + i * stride, b + (i + 1) * stride, b + (i + 2) * stride,
                            b + (i + 3) * stride};
    x.vk.dot_f32_x4(a, rows, n, out + i);
  }
  for (; i < count; ++i) out[i] = x.vk.dot_f32(a, b + i * stride, n);
}

// s[j] = cap(scale q . k) + slope * mask of cell c0 + j for query row (t, h), j < n: one
// function for both phases, so that both see the same scores and hence the same p. With a
// soft cap, cap(z) = softcap tanh(z / softcap), and slope[j] = cap'(z) = 1 - tanh^2.
void scores(const Ctx& x, int64_t t, int64_t h, int64_t c0, int64_t n, float* s, float* slope_out) {
  dots(x, x.q_row(t, h), x.k, h / x.s.group, c0, n, s);
  x.vk.scale_f32(s, s, x.scale, n);
  if (x.softcap > 0.0f) {
    for (int64_t j = 0; j < n; ++j) {
      const float c = std::tanh(s[j] / x.softcap);
      s[j] = x.softcap * c;
      slope_out[j] = 1.0f - c * c;
    }
  }
  if (!x.mask) return;
  const float slope = x.slope(h);
  const float* m = x.row(x.mask, t, 0) + c0;
  for (int64_t j = 0; j < n; ++j)
    s[j] = m[j] == -INFINITY ? -INFINITY : s[j] + slope * m[j];
}

// Cells [lo, hi) outside of which mask row t is -inf.
void visible_range(const Ctx& x, int64_t t, int64_t* lo, int64_t* hi) {
  *lo = 0;
  *hi = x.s.n_kv;
  if (!x.mask) return;
  const float* m = x.row(x.mask, t, 0);
  while (*lo < *hi && m[*lo] == -INFINITY) ++*lo;
  while (*hi > *lo && m[*hi - 1] == -INFINITY) --*hi;
}

void transpose_keys(const Ctx& x, int64_t hk, float* kt) {
  for (int64_t c = 0; c < x.s.n_kv; ++c) {
    const float* kr = x.row(x.k, c, hk);
    for (int64_t i = 0; i < x.s.hd; ++i) kt[i * x.s.n_kv + c] = kr[i];
  }
}

// Row r of KV head hk: its q and d out into the transposed copies (every row, one that
// sees nothing too: the dk/dv phase's ranges of rows may include it, with p = 0); its dq,
// scale * sum_c ds_c k_c with ds_c = p_c (dp_c - D); and its statistics.
void dq_row(const Ctx& x, int64_t hk, int64_t r, const float* kt, float* p, float* ds, float* cap_slope) {
  const int64_t hd = x.s.hd, rows = x.s.rows;
  const int64_t t = x.token(r), h = x.head(hk, r);
  const float* qr = x.q_row(t, h);
  const float* dr = x.dout_row(t, h);
  for (int64_t i = 0; i < hd; ++i) {
    x.qt[(hk * hd + i) * rows + r] = qr[i];
    x.dout_t[(hk * hd + i) * rows + r] = dr[i];
  }
  RowStats& st = x.stats[hk * rows + r];
  float* dq = x.dq + (h * x.s.n_tokens + t) * hd;
  int64_t lo, hi;
  visible_range(x, t, &lo, &hi);
  st = {0, 0, 0, 0, 0};
  std::fill(dq, dq + hd, 0.0f);
  if (lo >= hi) return;  // sees no cell: the forward gave zeros whatever q, k, v are
  const int64_t n = hi - lo;
  scores(x, t, h, lo, n, p, cap_slope);
  const float max = x.vk.max_f32(p, n);
  if (max == -INFINITY) return;
  const float inv_sum = 1.0f / x.vk.exp_sum_f32(p, p, max, n);
  x.vk.scale_f32(p, p, inv_sum, n);
  dots(x, dr, x.v, hk, lo, n, ds);
  const float d = x.vk.dot_f32(p, ds, n);
  for (int64_t j = 0; j < n; ++j) ds[j] = p[j] * (ds[j] - d);
  if (x.softcap > 0.0f) x.vk.mul_f32(ds, ds, cap_slope, n);
  strided_dots(x, ds, kt + lo, x.s.n_kv, n, hd, dq);
  x.vk.scale_f32(dq, dq, x.scale, hd);
  st = {max, inv_sum, d, int32_t(lo), int32_t(hi)};
}

// The rows [rlo, rhi) of KV head hk that see any of cells [c0, c1); false if none does.
bool block_rows(const Ctx& x, int64_t hk, int64_t c0, int64_t c1, int64_t* rlo, int64_t* rhi) {
  *rlo = x.s.rows;
  *rhi = 0;
  for (int64_t r = 0; r < x.s.rows; ++r) {
    const RowStats& st = x.stats[hk * x.s.rows + r];
    if (st.lo < c1 && st.hi > c0 && st.lo < st.hi) {
      *rlo = std::min(*rlo, r);
      *rhi = r + 1;
    }
  }
  return *rlo < *rhi;
}

// p and ds of cells [c0, c0 + nc) for rows [rlo, rhi) of KV head hk, transposed: cell c0 + j
// of row r at pt[j * rows + r - rlo] (and dst); zeros where the row does not see the cell.
void block_probs(const Ctx& x, int64_t hk, int64_t c0, int64_t nc, int64_t rlo, int64_t rhi,
                 float* pt, float* dst, float* p, float* dp, float* cap_slope) {
  const int64_t rows = x.s.rows;
  for (int64_t j = 0; j < nc; ++j) {
    std::fill(pt + j * rows, pt + j * rows + (rhi - rlo), 0.0f);
    std::fill(dst + j * rows, dst + j * rows + (rhi - rlo), 0.0f);
  }
  for (int64_t r = rlo; r < rhi; ++r) {
    const RowStats& st = x.stats[hk * rows + r];
    const int64_t a = std::max<int64_t>(c0, st.lo);
    const int64_t b = std::min<int64_t>(c0 + nc, st.hi);
    if (a >= b) continue;
    const int64_t n = b - a, t = x.token(r), h = x.head(hk, r);
    scores(x, t, h, a, n, p, cap_slope);
    x.vk.exp_sum_f32(p, p, st.max, n);
    x.vk.scale_f32(p, p, st.inv_sum, n);
    dots(x, x.dout_row(t, h), x.v, hk, a, n, dp);
    for (int64_t j = 0; j < n; ++j) {
      pt[(a - c0 + j) * rows + r - rlo] = p[j];
      const float ds = p[j] * (dp[j] - st.d);
      dst[(a - c0 + j) * rows + r - rlo] = x.softcap > 0.0f ? ds * cap_slope[j] : ds;
    }
  }
}

// dk and dv of cells [c0, c0 + nc) of KV head hk: dv_c = sum_r p_rc dout_r and dk_c =
// scale sum_r ds_rc q_r, dot products over the rows that see the block, the same whichever
// thread runs it.
void dkv_block(const Ctx& x, int64_t hk, int64_t c0, int64_t nc, float* pt, float* dst, float* p,
               float* dp, float* cap_slope) {
  const int64_t hd = x.s.hd, rows = x.s.rows;
  float* dk = x.dk + (hk * x.s.n_kv + c0) * hd;
  float* dv = x.dv + (hk * x.s.n_kv + c0) * hd;
  int64_t rlo, rhi;
  if (!block_rows(x, hk, c0, c0 + nc, &rlo, &rhi)) {
    std::fill(dk, dk + nc * hd, 0.0f);
    std::fill(dv, dv + nc * hd, 0.0f);
    return;
  }
  block_probs(x, hk, c0, nc, rlo, rhi, pt, dst, p, dp, cap_slope);
  const float* qt = x.qt + hk * hd * rows + rlo;
  const float* dout_t = x.dout_t + hk * hd * rows + rlo;
  for (int64_t j = 0; j < nc; ++j) {
    strided_dots(x, pt + j * rows, dout_t, rows, rhi - rlo, hd, dv + j * hd);
    strided_dots(x, dst + j * rows, qt, rows, rhi - rlo, hd, dk + j * hd);
  }
  x.vk.scale_f32(dk, dk, x.scale, nc * hd);
}

// An F32 tensor whose rows are dense and float-aligned (any row and plane strides).
bool dense_rows(const Tensor* t) {
  return t->type == DType::F32 && t->nb[0] == sizeof(float) && t->nb[1] % sizeof(float) == 0 &&
         t->nb[2] % sizeof(float) == 0;
}

}  // namespace

bool attention_back_supports(const Tensor* node) {
  const Tensor* mask = node->src[3];
  return node->type == DType::F32 && node->is_contiguous() && dense_rows(node->src[0]) &&
         dense_rows(node->src[1]) && dense_rows(node->src[2]) && dense_rows(node->src[4]) &&
         (!mask || dense_rows(mask));
}

size_t attention_back_work_size(const Tensor* node, int nth) {
  const Dims s = dims_of(node);
  return kAlign + shared_bytes(s) + size_t(nth) * thread_bytes(s);
}

// The dq phase. Items (KV head, tile of rows) are dealt round robin: under a causal mask
// later tokens see more cells, so contiguous shares would leave the last thread the most
// work. Each row is computed the same way whoever takes it.
bool attention_back_prepare(Tensor* node, const KernelParams& p) {
  const Ctx x(node, p);
  float* kt = x.scratch(p);
  float* ps = kt + floats(x.s.hd * x.s.n_kv) / sizeof(float);
  float* ds = ps + floats(x.s.n_kv) / sizeof(float);
  float* cap_slope = ds + floats(x.s.n_kv) / sizeof(float);
  const int64_t tiles = (x.s.rows + kRowTile - 1) / kRowTile;
  int64_t keys_of = -1;  // the KV head whose keys kt holds
  for (int64_t item = p.ith; item < x.s.n_head_kv * tiles; item += p.nth) {
    const int64_t hk = item / tiles;
    if (hk != keys_of) transpose_keys(x, keys_of = hk, kt);
    const int64_t r0 = (item % tiles) * kRowTile;
    for (int64_t r = r0; r < std::min(x.s.rows, r0 + kRowTile); ++r) dq_row(x, hk, r, kt, ps, ds, cap_slope);
  }
  return true;  // compute reads the rows' statistics and the transposed q and d out
}

// The dk/dv phase: items (KV head, block of kBlock cells), dealt round robin.
void attention_back_compute(Tensor* node, const KernelParams& p) {
  const Ctx x(node, p);
  float* pt = x.scratch(p);
  float* dst = pt + floats(kBlock * x.s.rows) / sizeof(float);
  float* ps = dst + floats(kBlock * x.s.rows) / sizeof(float);
  float* dp = ps + floats(kBlock) / sizeof(float);
  float* cap_slope = dp + floats(kBlock) / sizeof(float);
  const int64_t blocks = (x.s.n_kv + kBlock - 1) / kBlock;
  for (int64_t item = p.ith; item < x.s.n_head_kv * blocks; item += p.nth) {
    const int64_t hk = item / blocks;
    const int64_t c0 = (item % blocks) * kBlock;
    dkv_block(x, hk, c0, std::min(kBlock, x.s.n_kv - c0), pt, dst, ps, dp, cap_slope);
  }
}

}  // namespace tessera::cpu
