// Multi-head latent attention (blocks.h: mla_projections), as the reference's
// build_deepseek2 computes it: q per head [q_nope | q_pe]; one latent row per token,
// [c | k_pe] = attn_kv_a_mqa x, c RMS-normed and expanded by attn_kv_b into each head's
// k_nope and v; k_pe shared by all heads. Each head's rotated part is put first here
// (q = [q_pe | q_nope], k = [k_pe | k_nope]): the dot products are the reference's, and
// the rotation of the leading n_rot dims (rope_block, cache shifts) is every model's.
#include "core/check.h"
#include "core/ops.h"
#include "model/blocks.h"

namespace tessera {
namespace {

/// Per head h of every token of m [rows, n_tokens]: the n elements from row
/// h * head_stride + first, as [n, n_head, n_tokens] (head_stride 0: one part every head
/// shares).
Tensor* head_part(Graph& g, Tensor* m, int64_t n, int64_t n_head, int64_t head_stride, int64_t first) {
  const size_t e = m->nb[0];
  const Strides nb{e, size_t(head_stride) * e, m->nb[1], m->nb[1] * size_t(m->ne[1])};
  return ops::view(g, m, {n, n_head, m->ne[1], 1}, nb, size_t(first) * e);
}

/// The queries [head_dim, n_head, n_tokens] per head [q_nope | q_pe], from attn_q, or
/// through the low-rank attn_q_a, its norm and attn_q_b.
Tensor* mla_queries(Graph& g, const HParams& h, const BlockVariant& v, const LayerWeights& l, Tensor* x) {
  if (!v.has(&BlockVariant::q_lora)) return project(g, l, loaded_weight(l.wq), x);
  Tensor* low = project(g, l, loaded_weight(l.wq_a), x);  // [n_lora_q, n_tokens]
  return project(g, l, loaded_weight(l.wq_b), rms_norm_block(g, low, loaded_weight(l.attn_q_a_norm), nullptr, h.rms_eps));
}

}  // namespace

QkvProjections mla_projections(Graph& g, const HParams& h, const BlockVariant& v, const LayerWeights& l,
                               Tensor* x) {
  TESSERA_CHECK_MSG(v.mla, "mla_projections builds multi-head latent attention");
  const int64_t n_head = h.n_head;
  const int64_t hd = h.head_dim;
  const int64_t n_rot = h.n_rot;
  const int64_t nope = hd - n_rot;
  const int64_t vd = h.head_dim_v;
  const int64_t rank = h.n_lora_kv;
  TESSERA_CHECK(nope > 0 && h.n_head_kv == n_head);

  Tensor* q = mla_queries(g, h, v, l, x);  // [n_head hd, n_tokens]
  q = ops::concat(g, head_part(g, q, n_rot, n_head, hd, nope), head_part(g, q, nope, n_head, hd, 0), 0);

  Tensor* kv_a = project(g, l, loaded_weight(l.wkv_a_mqa), x);  // [rank + n_rot, n_tokens]: [c | k_pe]
  Tensor* c = ops::view(g, kv_a, {rank, kv_a->ne[1], 1, 1}, kv_a->nb, 0);
  c = rms_norm_block(g, c, loaded_weight(l.attn_kv_a_norm), nullptr, h.rms_eps);
  Tensor* kv = project(g, l, loaded_weight(l.wkv_b), c);  // [n_head (nope + vd), n_tokens]
  Tensor* k = ops::concat(g, head_part(g, kv_a, n_rot, n_head, 0, rank), head_part(g, kv, nope, n_head, nope + vd, 0), 0);
  // Values: each head's rows after its k_nope, made dense (the cache takes whole rows).
  Tensor* values = ops::cont(g, head_part(g, kv, vd, n_head, nope + vd, nope));
  return {q, k, values};
}

}  // namespace tessera
