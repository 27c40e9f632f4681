#include "model/blocks.h"

#include <cmath>

#include "core/check.h"
#include "core/ops.h"

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
  in.out_ids = input(DType::I32, {in.n_outputs, 1, 1, 1}, "inp_out_ids");
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

/// Attention of batch tokens [t0, t0 + gr.n_tokens) over cells [gr.kv_begin, + gr.n_kv),
/// whose mask starts at element m0 of kq_mask: merged heads [head_dim, n_head, n_tokens].
Tensor* attend_group(Graph& g, const HParams& h, const BatchInputs& in, Tensor* k_all, Tensor* v_all,
                     Tensor* q, const AttnGroup& gr, int64_t t0, int64_t m0) {
  const int64_t hd = h.head_dim;
  const int64_t nt = gr.n_tokens;
  const int64_t nk = gr.n_kv;
  const size_t elt = dtype_traits(k_all->type).type_size;
  const size_t row = k_all->nb[1];
  const size_t first = size_t(gr.kv_begin) * row;
  // keys and values: [head_dim, n_kv, n_head_kv]
  Tensor* keys = ops::view(g, k_all, {hd, nk, h.n_head_kv, 1}, {elt, row, hd * elt, row * nk}, first);
  Tensor* values = ops::view(g, v_all, {hd, nk, h.n_head_kv, 1}, {elt, row, hd * elt, row * nk}, first);
  Tensor* mask = ops::view(g, in.kq_mask, {nk, nt, 1, 1},
                           {sizeof(float), nk * sizeof(float), nk * nt * sizeof(float), nk * nt * sizeof(float)},
                           size_t(m0) * sizeof(float));
  Tensor* qg = ops::view(g, q, {hd, h.n_head, nt, 1}, q->nb, size_t(t0) * q->nb[2]);
  Tensor* qh = ops::permute(g, qg, 0, 2, 1, 3);  // [head_dim, n_tokens, n_head]
  return ops::attention(g, qh, keys, values, mask, 1.0f / std::sqrt(float(hd)));  // [head_dim, n_head, n_tokens]
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

Tensor* attention_block(Graph& g, const HParams& h, const BatchInputs& in, const KvLayer& kv,
                        Tensor* q, Tensor* k, Tensor* v) {
  const int64_t n_tokens = in.n_tokens;
  const int64_t n_embd_kv = h.n_embd_kv();

  // Store this batch's keys and values in their cache cells.
  Tensor* k_all = ops::set_rows(g, kv.k, ops::reshape(g, k, {n_embd_kv, n_tokens, 1, 1}), in.kv_slots);
  Tensor* v_all = ops::set_rows(g, kv.v, ops::reshape(g, v, {n_embd_kv, n_tokens, 1, 1}), in.kv_slots);

  std::vector<Tensor*> parts;
  int64_t t0 = 0;
  int64_t m0 = 0;
  for (const AttnGroup& gr : in.groups) {
    parts.push_back(attend_group(g, h, in, k_all, v_all, q, gr, t0, m0));
    t0 += gr.n_tokens;
    m0 += gr.n_tokens * gr.n_kv;
  }
  TESSERA_CHECK_MSG(!parts.empty() && t0 == n_tokens, "attention groups must cover the batch");
  Tensor* merged = concat_all(g, std::move(parts), 2);  // [head_dim, n_head, n_tokens]
  return ops::reshape(g, merged, {h.n_embd_q(), n_tokens, 1, 1});
}

Tensor* ffn_swiglu(Graph& g, Tensor* x, Tensor* gate, Tensor* up, Tensor* down) {
  Tensor* act = ops::mul(g, ops::silu(g, ops::mul_mat(g, gate, x)), ops::mul_mat(g, up, x));
  return ops::mul_mat(g, down, act);
}

}  // namespace tessera
