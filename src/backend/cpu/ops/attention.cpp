#include "backend/cpu/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "backend/cpu/attn_kernels.h"
#include "backend/cpu/ops/common.h"
#include "backend/cpu/vec.h"

namespace tessera::cpu {
namespace {

constexpr size_t kAlign = 64;
size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct Shape3 {
  int64_t hd, n_tokens, n_head, n_kv, n_head_kv, group;
  int64_t vd;  // the values' head size (hd but for DeepSeek's MLA)
  /// The head size of src[which]: keys (1) or values (2).
  int64_t dim(int which) const { return which == 1 ? hd : vd; }
};

Shape3 shape_of(const Tensor* node) {
  const Tensor* q = node->src[0];
  const Tensor* k = node->src[1];
  return {q->ne[0], q->ne[1], q->ne[2], k->ne[1], k->ne[2], q->ne[2] / k->ne[2], node->src[2]->ne[0]};
}

// How the tiles get their keys and values (F32 rows, or F16 ones for tile_f16):
//  - direct F16: a KV head's query rows fit one tile (decode), both caches are F16, and
//    the level reads F16 itself: each head's cells are read by one tile only, and no F32
//    copy is made;
//  - whole F16: both caches F16 otherwise: prepare converts the window to F32 once,
//    split over cells, as every tile of a head reads it again; head-major ([head][cell]
//    [d]), so a tile reads its head's rows one after another (cell-major put a head's
//    rows n_head_kv * d floats apart: at 16384 cells TinyLlama's prompt tiles ran at half
//    the speed of the per-head conversion's dense rows);
//  - per head: any other type not F32 (BF16, the block-quantized types, F16 beside
//    another type): each thread converts the cells of the KV head it works on into its
//    own scratch, [lo, hi) as the tiles ask for them, and keeps them while its next items
//    are tiles of the same head. There is never a converted copy of the whole cache, and
//    the tile kernels stay those of the F32 cache, fast at every level; a dot product
//    on the quantized blocks would need a kernel per format per level and, for the
//    values, a weighted sum of rows that are dequantized anyway. A tile's conversion
//    costs n * d conversions against its 2 * rows * n * d multiply-adds of the scores
//    and the sum.
//  - F32: read in place.
bool reads_f16(const Tensor* node) {
  const Shape3 s = shape_of(node);
  return std::get<AttentionParams>(node->params).softcap == 0.0f && node->src[1]->type == DType::F16 &&
         node->src[2]->type == DType::F16 && s.group * s.n_tokens <= kAttnRows && attn_kernels().tile_f16 != nullptr;
}

bool converts_whole(const Tensor* node) {
  return node->src[1]->type == DType::F16 && node->src[2]->type == DType::F16 && !reads_f16(node);
}

// src[which] (keys 1, values 2) is converted per head into thread scratch.
bool converts_per_head(const Tensor* node, int which) {
  return node->src[which]->type != DType::F32 && !converts_whole(node) && !reads_f16(node);
}

// The F32 copy of the keys (which 1) or the values (2).
size_t converted_bytes(const Shape3& s, int which) {
  return round_up(size_t(s.n_head_kv * s.n_kv * s.dim(which)) * sizeof(float));
}

// Where the F32 copy of src[which] starts in the work area.
char* converted_area(const KernelParams& p, const Shape3& s, int which) {
  return align64(p.work) + (which == 2 ? converted_bytes(s, 1) : 0);
}

// Bytes of a thread's converted cells of one KV head of src[which] (0 unless per head).
size_t head_bytes(const Tensor* node, const Shape3& s, int which) {
  return converts_per_head(node, which) ? round_up(size_t(s.n_kv * s.dim(which)) * sizeof(float)) : 0;
}

bool uses_alibi(const Tensor* node) { return std::get<AttentionParams>(node->params).max_bias > 0; }

// Per thread: the scaled query rows of a tile, the tile kernel's scratch, then (ALiBi)
// the tile's mask rows times their head's slope.
size_t thread_bytes(const Tensor* node, const Shape3& s) {
  const size_t alibi = uses_alibi(node) ? round_up(size_t(kAttnRows * s.n_kv) * sizeof(float)) : 0;
  return round_up(size_t(kAttnRows * s.hd) * sizeof(float)) +
         round_up(attn_scratch_floats(s.n_kv, std::max(s.hd, s.vd)) * sizeof(float)) + alibi +
         head_bytes(node, s, 1) + head_bytes(node, s, 2);
}

// Where a tile finds the F32 rows of K (which 1) or V (2) for cells [lo, hi) of a KV
// head: the cache itself (F32), its whole copy (whole F16, made by prepare), or this
// thread's conversion of the head's cells (per head), which grows to cover [lo, hi) and
// is kept while the thread's next items are tiles of the same head.
class KvRows {
 public:
  KvRows(const Tensor* node, int which, const KernelParams& p, const Shape3& s, float* head_buf)
      : t_(node->src[which]), d_(s.dim(which)), per_head_(converts_per_head(node, which)), buf_(head_buf) {
    if (converts_whole(node)) {
      base_ = reinterpret_cast<const float*>(converted_area(p, s, which));
      row_ = size_t(d_);
      head_ = size_t(s.n_kv * d_);
    } else if (t_->type == DType::F32) {
      base_ = static_cast<const float*>(t_->data);
      row_ = t_->nb[1] / sizeof(float);
      head_ = t_->nb[2] / sizeof(float);
    }
  }

  /// Cell lo's row of head hk; *stride: floats between cells.
  const float* rows(int64_t hk, int64_t lo, int64_t hi, size_t* stride) {
    if (!per_head_) {
      *stride = row_;
      return base_ + size_t(hk) * head_ + size_t(lo) * row_;
    }
    if (hk != cur_head_ || lo_ >= hi_) {
      cur_head_ = hk;
      convert(lo, hi);
      lo_ = lo;
      hi_ = hi;
    } else {
      if (lo < lo_) convert(lo, lo_);
      if (hi > hi_) convert(hi_, hi);
      lo_ = std::min(lo_, lo);
      hi_ = std::max(hi_, hi);
    }
    *stride = size_t(d_);
    return buf_ + size_t(lo) * size_t(d_);
  }

 private:
  void convert(int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      float* dst = buf_ + size_t(c) * size_t(d_);
      const float* row = read_row(t_, c, cur_head_, 0, dst);
      if (row != dst) std::copy(row, row + d_, dst);
    }
  }

  const Tensor* t_;
  int64_t d_;
  bool per_head_;
  float* buf_;  // per head: cell c of the head at buf_ + c * d_
  const float* base_ = nullptr;
  size_t row_ = 0, head_ = 0;
  int64_t cur_head_ = -1, lo_ = 0, hi_ = 0;
};

// Cells [lo, hi) outside of which every row of the tile is masked.
void visible_range(const Tensor* mask, const int64_t* tokens, int n, int64_t n_kv, int64_t* lo,
                   int64_t* hi) {
  *lo = n_kv;
  *hi = 0;
  for (int i = 0; i < n; ++i) {
    if (i > 0 && tokens[i] == tokens[i - 1]) continue;
    const auto* m = reinterpret_cast<const float*>(elem_ptr(mask, 0, tokens[i], 0, 0));
    int64_t a = 0, b = n_kv;
    while (a < b && m[a] == -INFINITY) ++a;
    while (b > a && m[b - 1] == -INFINITY) --b;
    if (a < b) {
      *lo = std::min(*lo, a);
      *hi = std::max(*hi, b);
    }
  }
  if (*lo >= *hi) *lo = *hi = 0;
}

}  // namespace

bool attention_supports(const Tensor* node) {
  const Tensor* q = node->src[0];
  const Tensor* k = node->src[1];
  const Tensor* v = node->src[2];
  const Tensor* mask = node->src[3];
  // Any type whose rows convert to float (a quantized one in whole blocks per head),
  // K and V each its own; F32 rows are read in place, so their strides are whole floats.
  auto readable = [](const Tensor* t) {
    const DTypeTraits& tr = dtype_traits(t->type);
    const bool f32_aligned = t->type != DType::F32 || (t->nb[1] % sizeof(float) == 0 && t->nb[2] % sizeof(float) == 0);
    return rows_readable(t) && t->nb[0] == tr.type_size && t->ne[0] % tr.block_size == 0 && f32_aligned;
  };
  const bool kv_ok = readable(k) && readable(v);
  return node->type == DType::F32 && node->is_contiguous() && q->type == DType::F32 &&
         q->nb[0] == sizeof(float) && kv_ok &&
         (!mask || (mask->type == DType::F32 && mask->nb[0] == sizeof(float)));
}

size_t attention_work_size(const Tensor* node, int nth) {
  const Shape3 s = shape_of(node);
  const size_t conv = converts_whole(node) ? converted_bytes(s, 1) + converted_bytes(s, 2) : 0;
  return kAlign + conv + size_t(nth) * thread_bytes(node, s);
}

// Converts K and V to F32 (whole F16), laid out [head][cell][head_dim], split over cells.
bool attention_prepare(Tensor* node, const KernelParams& p) {
  if (!converts_whole(node)) return false;
  const Shape3 s = shape_of(node);
  const VecKernels& vk = vec_kernels();
  int64_t c0, c1;
  split_range(s.n_kv, p.ith, p.nth, &c0, &c1);
  for (int which = 1; which <= 2; ++which) {
    const Tensor* t = node->src[which];
    const int64_t d = s.dim(which);
    float* dst = reinterpret_cast<float*>(converted_area(p, s, which));
    for (int64_t h = 0; h < s.n_head_kv; ++h) {
      float* head = dst + h * s.n_kv * d;
      for (int64_t c = c0; c < c1; ++c) {
        vk.f16_to_f32(reinterpret_cast<const uint16_t*>(elem_ptr(t, 0, c, h, 0)), head + c * d, d);
      }
    }
  }
  return true;
}

// Soft-capped scores (Gemma 2) take the reference level's tile, the one that caps them:
// the vector levels' tiles keep their scores in registers.
AttnTileFn tile_of(const AttentionParams& ap, bool direct) {
  if (ap.softcap > 0.0f) return reference::kAttnKernels.tile;
  return direct ? attn_kernels().tile_f16 : attn_kernels().tile;
}

// Work items: for each KV head, its query rows (token-major, then the heads that share
// it) in tiles of 16. Threads take contiguous ranges of items.
void attention_compute(Tensor* node, const KernelParams& p) {
  const Tensor* q = node->src[0];
  const Tensor* mask = node->src[3];
  const Shape3 s = shape_of(node);
  const AttentionParams ap = std::get<AttentionParams>(node->params);
  const float scale = ap.scale;
  const bool direct = reads_f16(node);
  const int64_t rows_per_head = s.group * s.n_tokens;
  const int64_t tiles_per_head = (rows_per_head + kAttnRows - 1) / kAttnRows;
  char* mine = align64(p.work) + (converts_whole(node) ? converted_bytes(s, 1) + converted_bytes(s, 2) : 0) +
               size_t(p.ith) * thread_bytes(node, s);
  float* qbuf = reinterpret_cast<float*>(mine);
  float* scratch = reinterpret_cast<float*>(mine + round_up(size_t(kAttnRows * s.hd) * sizeof(float)));
  char* after_scratch = reinterpret_cast<char*>(scratch) + round_up(attn_scratch_floats(s.n_kv, std::max(s.hd, s.vd)) * sizeof(float));
  float* alibi_rows = ap.max_bias > 0 ? reinterpret_cast<float*>(after_scratch) : nullptr;
  char* heads_area = after_scratch + (ap.max_bias > 0 ? round_up(size_t(kAttnRows * s.n_kv) * sizeof(float)) : 0);
  KvRows k_rows(node, 1, p, s, reinterpret_cast<float*>(heads_area));
  KvRows v_rows(node, 2, p, s, reinterpret_cast<float*>(heads_area + head_bytes(node, s, 1)));
  const VecKernels& vk = vec_kernels();
  const AttnTileFn tile_fn = tile_of(ap, direct);

  int64_t i0, i1;
  split_range(s.n_head_kv * tiles_per_head, p.ith, p.nth, &i0, &i1);
  for (int64_t item = i0; item < i1; ++item) {
    const int64_t hk = item / tiles_per_head;
    const int64_t first = (item % tiles_per_head) * kAttnRows;
    AttnTile t;
    t.rows = int(std::min<int64_t>(kAttnRows, rows_per_head - first));
    t.hd = s.hd;
    t.vd = s.vd;
    int64_t tokens[kAttnRows];
    int64_t heads[kAttnRows];
    for (int r = 0; r < kAttnRows; ++r) {
      const int64_t row = first + std::min(r, t.rows - 1);
      const int64_t tok = row / s.group;
      const int64_t h = hk * s.group + row % s.group;
      tokens[r] = tok;
      heads[r] = h;
      if (r >= t.rows) continue;
      const auto* qrow = reinterpret_cast<const float*>(elem_ptr(q, 0, tok, h, 0));
      vk.scale_f32(qbuf + r * s.hd, qrow, scale, s.hd);
      t.q[r] = qbuf + r * s.hd;
      t.out[r] = reinterpret_cast<float*>(elem_ptr(node, 0, h, tok, 0));
    }
    int64_t lo = 0, hi = s.n_kv;
    if (mask) {
      visible_range(mask, tokens, t.rows, s.n_kv, &lo, &hi);
      t.mask = reinterpret_cast<const float*>(mask->data) + lo;
      for (int r = 0; r < kAttnRows; ++r) t.mask_off[r] = int32_t(tokens[r] * int64_t(mask->nb[1] / sizeof(float)));
    }
    t.n = hi - lo;
    if (t.n == 0) {
      for (int r = 0; r < t.rows; ++r) std::fill(t.out[r], t.out[r] + s.vd, 0.0f);
      continue;
    }
    if (alibi_rows) {  // each row's visible mask times its head's slope
      for (int r = 0; r < kAttnRows; ++r) {
        if (r >= t.rows) {
          t.mask_off[r] = t.mask_off[t.rows - 1];
          continue;
        }
        const float slope = alibi_slope(heads[r], s.n_head, ap.max_bias);
        const float* m = t.mask + t.mask_off[r];
        float* dst = alibi_rows + size_t(r) * size_t(t.n);
        for (int64_t c = 0; c < t.n; ++c) dst[c] = m[c] == -INFINITY ? -INFINITY : slope * m[c];
        t.mask_off[r] = int32_t(r * t.n);
      }
      t.mask = alibi_rows;
    }
    if (direct) {
      const Tensor* kc = node->src[1];
      const Tensor* vc = node->src[2];
      t.k16 = reinterpret_cast<const uint16_t*>(elem_ptr(kc, 0, lo, hk, 0));
      t.k_stride = kc->nb[1] / sizeof(uint16_t);
      t.v16 = reinterpret_cast<const uint16_t*>(elem_ptr(vc, 0, lo, hk, 0));
      t.v_stride = vc->nb[1] / sizeof(uint16_t);
    } else {
      t.k = k_rows.rows(hk, lo, hi, &t.k_stride);
      t.v = v_rows.rows(hk, lo, hi, &t.v_stride);
    }
    t.scratch = scratch;
    t.softcap = ap.softcap;
    tile_fn(t);
  }
}

}  // namespace tessera::cpu
