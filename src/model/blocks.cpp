#include "model/blocks.h"

#include <cmath>

#include "core/check.h"
#include "core/ops.h"
#include "model/variant_check.h"

namespace tessera {

int64_t BatchInputs::mask_size() const {
  int64_t n = 0;
  for (const AttnGroup& gr : groups) n += gr.n_kv * gr.n_tokens;
  return n;
}

void create_batch_inputs(Graph& g, BatchInputs& in) {
  auto input = [&](DType type, const Shape& ne, const char* name) {
    Tensor* t = g.arena().new_tensor(type, ne, name);
    t->flags |= kFlagInput;
    return t;
  };
  in.tokens = input(DType::I32, {in.n_tokens, 1, 1, 1}, "inp_tokens");
  in.positions = input(DType::I32, {in.n_tokens, 1, 1, 1}, "inp_pos");
  in.kv_slots = input(DType::I32, {in.n_tokens, 1, 1, 1}, "inp_kv_slots");
  in.kq_mask = input(DType::F32, {in.mask_size(), 1, 1, 1}, "inp_kq_mask");
  in.kq_mask_swa = in.swa_mask ? input(DType::F32, {in.mask_size(), 1, 1, 1}, "inp_kq_mask_swa") : nullptr;
  in.out_ids = input(DType::I32, {in.n_outputs, 1, 1, 1}, "inp_out_ids");
}

Tensor* project(Graph& g, const LayerWeights& l, Tensor* w, Tensor* x) {
  Tensor* y = ops::mul_mat(g, w, x);
  for (const LoraDelta& d : l.lora) {
    if (d.target == w) y = ops::add(g, y, ops::scale(g, ops::mul_mat(g, d.b, ops::mul_mat(g, d.a, x)), d.scale));
  }
  return y;
}

Tensor* loaded_weight(Tensor* t) {
  TESSERA_CHECK_MSG(t != nullptr, "a weight of the model's decided variant is not loaded");
  return t;
}

Tensor* rms_norm_block(Graph& g, Tensor* x, Tensor* w, Tensor* b, float eps) {
  Tensor* cur = ops::mul(g, ops::rms_norm(g, x, eps), w);
  return b ? ops::add(g, cur, b) : cur;
}

Tensor* layer_norm_block(Graph& g, Tensor* x, Tensor* w, Tensor* b, float eps) {
  Tensor* cur = ops::mul(g, ops::norm(g, x, eps), w);
  return b ? ops::add(g, cur, b) : cur;
}

namespace {


/// t when the decided variant has `part`, else null.
Tensor* if_has(const BlockVariant& v, Presence BlockVariant::*part, Tensor* t) {
  return v.has(part) ? loaded_weight(t) : nullptr;
}

/// Rows [r0, r0 + n_head * head_dim) of every column of m [rows, cols], as
/// [head_dim, n_head, cols]: a view with m's column stride.
Tensor* head_rows(Graph& g, Tensor* m, int64_t r0, int64_t head_dim, int64_t n_head) {
  const size_t e = m->nb[0];
  const Strides nb{e, size_t(head_dim) * e, m->nb[1], m->nb[1] * size_t(m->ne[1])};
  return ops::view(g, m, {head_dim, n_head, m->ne[1], 1}, nb, size_t(r0) * e);
}

/// t [head_dim, n_heads, n_tokens] (each token's heads dense) as rows
/// [head_dim * n_heads, n_tokens], keeping t's token stride: a view, which unlike a
/// reshape also works when t is a strided view.
Tensor* token_rows(Graph& g, Tensor* t) {
  TESSERA_CHECK_MSG(t->nb[1] == size_t(t->ne[0]) * t->nb[0] && t->ne[3] == 1,
                    "attention: each token's heads must be dense");
  const size_t plane = t->nb[2] * size_t(t->ne[2]);
  return ops::view(g, t, {t->ne[0] * t->ne[1], t->ne[2], 1, 1}, {t->nb[0], t->nb[2], plane, plane},
                   0);
}

/// Attention of batch tokens [t0, t0 + gr.n_tokens) over cells [gr.kv_begin, + gr.n_kv),
/// whose mask starts at element m0 of kq_mask: merged heads [head_dim_v, n_head, n_tokens].
Tensor* attend_group(Graph& g, const HParams& h, Tensor* kq_mask, Tensor* k_all, Tensor* v_all,
                     Tensor* q, const AttnGroup& gr, int64_t t0, int64_t m0) {
  const int64_t hd = h.head_dim;
  const int64_t nt = gr.n_tokens;
  const int64_t nk = gr.n_kv;
  // keys and values: [head_dim, n_kv, n_head_kv]; a head's part of a cell's row is
  // row_size(head_dim) bytes (whole blocks for a quantized cache).
  const size_t row = k_all->nb[1];
  const size_t first = size_t(gr.kv_begin) * row;
  Tensor* keys = ops::view(g, k_all, {hd, nk, h.n_head_kv, 1},
                           {k_all->nb[0], row, dtype_row_size(k_all->type, hd), row * nk}, first);
  const int64_t vd = h.head_dim_v;
  const size_t v_row = v_all->nb[1];
  Tensor* values = ops::view(g, v_all, {vd, nk, h.n_head_kv, 1},
                             {v_all->nb[0], v_row, dtype_row_size(v_all->type, vd), v_row * nk},
                             size_t(gr.kv_begin) * v_row);
  Tensor* mask = ops::view(g, kq_mask, {nk, nt, 1, 1},
                           {sizeof(float), nk * sizeof(float), nk * nt * sizeof(float), nk * nt * sizeof(float)},
                           size_t(m0) * sizeof(float));
  Tensor* qg = ops::view(g, q, {hd, h.n_head, nt, 1}, q->nb, size_t(t0) * q->nb[2]);
  Tensor* qh = ops::permute(g, qg, 0, 2, 1, 3);  // [head_dim, n_tokens, n_head]
  const float max_bias = h.alibi() ? h.alibi_max_bias : 0.0f;
  return ops::attention(g, qh, keys, values, mask, h.kq_scale(), max_bias, h.attn_softcap);  // [head_dim, n_head, n_tokens]
}

/// parts joined along `dim`, as a balanced tree (each element is copied log2(n) times).
Tensor* concat_all(Graph& g, std::vector<Tensor*> parts, int dim) {
  while (parts.size() > 1) {
    std::vector<Tensor*> next;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) next.push_back(ops::concat(g, parts[i], parts[i + 1], dim));
    if (parts.size() % 2) next.push_back(parts.back());
    parts = std::move(next);
  }
  return parts.front();
}

}  // namespace

Tensor* input_embeddings(Graph& g, const ModelWeights& w, const BatchInputs& in) {
  TESSERA_CHECK_MSG(is_decided(w.variant), "a model's block variant is decided when its weights are made");
  Tensor* x = ops::get_rows(g, w.token_embd, in.tokens);  // [n_embd, n_tokens]
  if (w.variant.token_types) {  // every token is of type 0: row 0, added to each
    Tensor* types = loaded_weight(w.token_types);
    x = ops::add(g, x, ops::view(g, types, {types->ne[0], 1, 1, 1}, types->nb, 0));
  }
  if (w.variant.learned_positions()) x = ops::add(g, x, ops::get_rows(g, loaded_weight(w.position_embd), in.positions));
  return x;
}

QkvProjections qkv_projections(Graph& g, const HParams& h, const BlockVariant& v, const LayerWeights& l,
                               Tensor* x) {
  const int64_t hd = h.head_dim;
  const int64_t n_tokens = x->ne[1];
  TESSERA_CHECK_MSG(v.qkv != QkvLayout::FusedPerHead, "a per-head qkv layout needs the architecture's own split");
  auto clamped = [&](Tensor* t) { return h.clamp_kqv > 0 ? ops::clamp(g, t, -h.clamp_kqv, h.clamp_kqv) : t; };
  auto biased = [&](Tensor* t, Tensor* b) { return b ? ops::add(g, t, b) : t; };
  const bool separate = v.qkv == QkvLayout::Separate;
  Tensor* bq = separate ? if_has(v, &BlockVariant::qkv_bias, l.bq) : nullptr;
  Tensor* bk = separate ? if_has(v, &BlockVariant::qkv_bias, l.bk) : nullptr;
  Tensor* bv = separate ? if_has(v, &BlockVariant::qkv_bias, l.bv) : nullptr;
  if (!separate || l.wqkv != nullptr) {  // in the file, or the parts joined at load
    const int64_t n_q = h.n_embd_q();
    const int64_t n_kv = h.n_embd_kv();
    TESSERA_CHECK_MSG(loaded_weight(l.wqkv)->ne[1] == n_q + 2 * n_kv, "wqkv must hold the rows of wq, wk and wv");
    const bool separate_biases = bq != nullptr;  // of parts fused at load
    Tensor* bqkv = separate ? nullptr : if_has(v, &BlockVariant::qkv_bias, l.bqkv);
    Tensor* qkv = biased(project(g, l, l.wqkv, x), bqkv);  // [n_q + 2 n_kv, n_tokens]
    if (!separate_biases) qkv = clamped(qkv);
    QkvProjections p{head_rows(g, qkv, 0, hd, h.n_head), head_rows(g, qkv, n_q, hd, h.n_head_kv),
                     head_rows(g, qkv, n_q + n_kv, hd, h.n_head_kv)};
    if (separate_biases) {  // each part: its bias, then the clamp
      auto part = [&](Tensor* t, Tensor* b, int64_t heads) {
        return clamped(ops::add(g, t, ops::reshape(g, b, {hd, heads, 1, 1})));
      };
      p = {part(p.q, bq, h.n_head), part(p.k, bk, h.n_head_kv), part(p.v, bv, h.n_head_kv)};
    }
    return p;
  }
  return {ops::reshape(g, clamped(biased(project(g, l, loaded_weight(l.wq), x), bq)), {hd, h.n_head, n_tokens, 1}),
          ops::reshape(g, clamped(biased(project(g, l, loaded_weight(l.wk), x), bk)), {hd, h.n_head_kv, n_tokens, 1}),
          ops::reshape(g, clamped(biased(project(g, l, loaded_weight(l.wv), x), bv)), {hd, h.n_head_kv, n_tokens, 1})};
}

Tensor* rope_factors(const HParams& h, const ModelWeights& w, int64_t n_ctx_per_seq) {
  if (w.variant.has(&BlockVariant::rope_freqs)) return loaded_weight(w.rope_freqs);
  if (w.variant.has(&BlockVariant::long_rope)) {
    return n_ctx_per_seq > h.n_ctx_orig ? loaded_weight(w.rope_factors_long) : loaded_weight(w.rope_factors_short);
  }
  return nullptr;
}

Tensor* rope_block(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in,
                   Tensor* t) {
  return ops::rope(g, t, in.positions, int(h.n_rot), h.rope_mode, h.rope_freq_base, h.rope_freq_scale,
                   rope_factors(h, w, in.n_ctx_per_seq), h.rope_yarn());
}

QkvProjections whole_qk_norm(Graph& g, const HParams& h, const BlockVariant& v, const LayerWeights& l,
                             const QkvProjections& p) {
  if (!v.qk_norm_whole) return p;
  auto normed = [&](Tensor* t, Tensor* w, Tensor* b) {  // t [head_dim, heads, n_tokens]
    Tensor* rows = norm_block(g, h, v, token_rows(g, t), loaded_weight(w), b);  // [head_dim * heads, n_tokens]
    return ops::reshape(g, rows, {t->ne[0], t->ne[1], t->ne[2], 1});
  };
  return {normed(p.q, l.attn_q_norm, l.attn_q_norm_b), normed(p.k, l.attn_k_norm, l.attn_k_norm_b), p.v};
}

Tensor* layer_mask(const HParams& h, const BatchInputs& in, int64_t il) {
  if (!h.mixed_swa()) return in.kq_mask;
  TESSERA_CHECK_MSG(il >= 0, "a model whose layers differ in their window needs the layer of each attention");
  TESSERA_CHECK_MSG(in.swa_mask, "a model whose layers differ in their window needs both masks");
  return h.layer_swa(il) ? loaded_weight(in.kq_mask_swa) : in.kq_mask;
}

Tensor* attention_block(Graph& g, const HParams& h, const BatchInputs& in, const KvLayer& kv,
                        Tensor* q, Tensor* k, Tensor* v, int64_t il) {
  const int64_t n_tokens = in.n_tokens;
  TESSERA_CHECK(k->ne[0] * k->ne[1] == h.n_embd_kv() && v->ne[0] * v->ne[1] == h.n_embd_v());

  // Store this batch's keys and values in their cache cells; without a cache (training),
  // the batch's own keys and values are the cells, a group's window being its tokens.
  Tensor* k_all = kv.k ? ops::set_rows(g, kv.k, token_rows(g, k), in.kv_slots) : token_rows(g, k);
  Tensor* v_all = kv.v ? ops::set_rows(g, kv.v, token_rows(g, v), in.kv_slots) : token_rows(g, v);

  Tensor* mask = layer_mask(h, in, il);
  std::vector<Tensor*> parts;
  int64_t t0 = 0;
  int64_t m0 = 0;
  for (const AttnGroup& gr : in.groups) {
    parts.push_back(attend_group(g, h, mask, k_all, v_all, q, gr, t0, m0));
    t0 += gr.n_tokens;
    m0 += gr.n_tokens * gr.n_kv;
  }
  TESSERA_CHECK_MSG(!parts.empty() && t0 == n_tokens, "attention groups must cover the batch");
  Tensor* merged = concat_all(g, std::move(parts), 2);  // [head_dim_v, n_head, n_tokens]
  return ops::reshape(g, merged, {h.head_dim_v * h.n_head, n_tokens, 1, 1});
}

Tensor* attn_output(Graph& g, const BlockVariant& v, const LayerWeights& l, Tensor* attn) {
  Tensor* out = project(g, l, l.wo, attn);
  return v.has(&BlockVariant::out_bias) ? ops::add(g, out, loaded_weight(l.bo)) : out;
}

namespace {

Tensor* activate(Graph& g, Tensor* t, Activation act) {
  switch (act) {
    case Activation::Silu:
      return ops::silu(g, t);
    case Activation::Gelu:
      return ops::gelu(g, t);
    case Activation::ReluSqr:
      return ops::relu_sqr(g, t);
  }
  return t;
}

}  // namespace

Tensor* ffn_block(Graph& g, Tensor* x, const BlockVariant& v, const LayerWeights& l) {
  Tensor* hidden = nullptr;
  if (v.ffn == FfnKind::GatedFused || (v.ffn == FfnKind::Gated && l.ffn_gate_up != nullptr)) {
    const int64_t n_ff = loaded_weight(l.ffn_gate_up)->ne[1] / 2;
    TESSERA_CHECK_MSG(l.ffn_gate_up->ne[1] == 2 * n_ff && l.ffn_down->ne[0] == n_ff,
                      "ffn_gate_up must hold the rows of gate and up");
    Tensor* gu = project(g, l, l.ffn_gate_up, x);  // [2 n_ff, n_tokens]
    const Strides nb = gu->nb;
    Tensor* gx = ops::view(g, gu, {n_ff, gu->ne[1], 1, 1}, nb, 0);
    Tensor* ux = ops::view(g, gu, {n_ff, gu->ne[1], 1, 1}, nb, size_t(n_ff) * nb[0]);
    hidden = ops::mul(g, activate(g, gx, v.act), ux);
  } else if (v.ffn == FfnKind::Gated) {
    hidden = ops::mul(g, activate(g, project(g, l, loaded_weight(l.ffn_gate), x), v.act), project(g, l, loaded_weight(l.ffn_up), x));
  } else {
    Tensor* up = project(g, l, loaded_weight(l.ffn_up), x);
    hidden = activate(g, v.has(&BlockVariant::up_bias) ? ops::add(g, up, loaded_weight(l.ffn_up_b)) : up, v.act);
  }
  Tensor* out = project(g, l, l.ffn_down, hidden);
  return v.has(&BlockVariant::down_bias) ? ops::add(g, out, loaded_weight(l.ffn_down_b)) : out;
}

Tensor* norm_block(Graph& g, const HParams& h, const BlockVariant& v, Tensor* x, Tensor* w, Tensor* b) {
  Tensor* bias = if_has(v, &BlockVariant::norm_bias, b);
  return v.norm == NormKind::Rms ? rms_norm_block(g, x, w, bias, h.rms_eps) : layer_norm_block(g, x, w, bias, h.norm_eps);
}

namespace {

/// A block's output on its way into the residual: its post-norm (w, when the variant has
/// post-norms), times h.residual_scale.
Tensor* into_residual(Graph& g, const HParams& h, const BlockVariant& v, Tensor* out, Tensor* w) {
  if (v.post_norms) out = norm_block(g, h, v, out, loaded_weight(w), nullptr);
  return h.residual_scale != 1.0f ? ops::scale(g, out, h.residual_scale) : out;
}

}  // namespace

Tensor* decoder_layer(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in,
                      int64_t il, Tensor* x) {
  const BlockVariant v = layer_variant(w.variant, h, il);  // experts or the dense FFN
  TESSERA_CHECK_MSG((v.ffn_norm || v.parallel() || !v.pre_norm) && !v.qk_norm && v.second_norm == Presence::No,
                    "decoder_layer builds layers with an ffn_norm (or a parallel FFN reading attn_norm) "
                    "and no per-head q/k norms");
  const LayerWeights& l = w.layers[size_t(il)];
  const bool rope = v.rope();
  Tensor* cur = v.pre_norm ? norm_block(g, h, v, x, l.attn_norm, l.attn_norm_b) : x;
  const QkvProjections p = v.mla ? mla_projections(g, h, v, l, cur)
                                 : whole_qk_norm(g, h, v, l, qkv_projections(g, h, v, l, cur));  // one mul_mat when fused
  Tensor* attn = attention_block(g, h, in, in.kv[size_t(il)], rope ? rope_block(g, h, w, in, p.q) : p.q,
                                 rope ? rope_block(g, h, w, in, p.k) : p.k, p.v, il);
  attn = into_residual(g, h, v, attn_output(g, v, l, attn), l.post_attn_norm);
  if (v.parallel()) {
    if (v.ffn_norm) cur = norm_block(g, h, v, x, l.ffn_norm, l.ffn_norm_b);
    return ops::add(g, x, ops::add(g, attn, into_residual(g, h, v, feed_forward(g, h, v, l, cur), l.post_ffn_norm)));
  }
  x = ops::add(g, x, attn);
  cur = v.pre_norm ? norm_block(g, h, v, x, l.ffn_norm, l.ffn_norm_b) : x;
  return ops::add(g, x, into_residual(g, h, v, feed_forward(g, h, v, l, cur), l.post_ffn_norm));
}

Tensor* post_norm_layer(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in,
                        int64_t il, Tensor* x) {
  const BlockVariant& v = w.variant;
  TESSERA_CHECK_MSG(v.post_norm, "post_norm_layer builds the layers of a post-norm variant");
  const LayerWeights& l = w.layers[size_t(il)];
  const bool rope = v.rope();
  const QkvProjections p = qkv_projections(g, h, v, l, x);
  Tensor* cur = attention_block(g, h, in, in.kv[size_t(il)], rope ? rope_block(g, h, w, in, p.q) : p.q,
                                rope ? rope_block(g, h, w, in, p.k) : p.k, p.v);
  x = norm_block(g, h, v, ops::add(g, attn_output(g, v, l, cur), x), l.attn_out_norm, l.attn_out_norm_b);
  return norm_block(g, h, v, ops::add(g, ffn_block(g, x, v, l), x), l.layer_out_norm, l.layer_out_norm_b);
}

Tensor* encoder_stack(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in, Tensor* x) {
  TESSERA_CHECK_MSG(!w.variant.logits, "encoder_stack builds a variant without logits");
  if (w.variant.embd_norm) x = norm_block(g, h, w.variant, x, w.token_embd_norm, w.token_embd_norm_b);
  for (int64_t il = 0; il < h.n_layer; ++il) x = post_norm_layer(g, h, w, in, il, x);
  return ops::get_rows(g, x, in.out_ids);  // the final hidden states of the output tokens
}

Tensor* output_logits(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in,
                      Tensor* x) {
  x = ops::get_rows(g, x, in.out_ids);  // only the tokens whose logits are wanted
  Tensor* logits = logits_block(g, w, norm_block(g, h, w.variant, x, w.output_norm, w.output_norm_b));
  if (h.logit_scale != 1.0f) logits = ops::scale(g, logits, h.logit_scale);
  return h.final_softcap > 0 ? ops::softcap(g, logits, h.final_softcap) : logits;
}

Tensor* decoder_stack(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in,
                      Tensor* x) {
  for (int64_t il = 0; il < h.n_layer; ++il) x = decoder_layer(g, h, w, in, il, x);
  return output_logits(g, h, w, in, x);
}

Tensor* logits_block(Graph& g, const ModelWeights& w, Tensor* x) {
  return ops::mul_mat(g, w.variant.has(&BlockVariant::output) ? loaded_weight(w.output) : w.token_embd, x);
}

const Tensor* logits_product(const Tensor* logits) {
  while (logits->op == Op::Scale || logits->op == Op::Softcap) logits = logits->src[0];
  return logits;
}

Tensor* scaled_embeddings(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);
  return h.embd_scale != 1.0f ? ops::scale(g, x, h.embd_scale) : x;
}

}  // namespace tessera
