#include "model/blocks.h"

#include <cmath>

#include "core/ops.h"

namespace tessera {

void create_batch_inputs(Graph& g, BatchInputs& in) {
  auto input = [&](DType type, const Shape& ne, const char* name) {
    Tensor* t = g.arena().new_tensor(type, ne, name);
    t->flags |= kFlagInput;
    return t;
  };
  in.tokens = input(DType::I32, {in.n_tokens, 1, 1, 1}, "inp_tokens");
  in.positions = input(DType::I32, {in.n_tokens, 1, 1, 1}, "inp_pos");
  in.kv_slots = input(DType::I32, {in.n_tokens, 1, 1, 1}, "inp_kv_slots");
  in.kq_mask = input(DType::F32, {in.n_kv, in.n_tokens, 1, 1}, "inp_kq_mask");
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

Tensor* attention_block(Graph& g, const HParams& h, const BatchInputs& in, const KvLayer& kv,
                        Tensor* q, Tensor* k, Tensor* v) {
  const int64_t n_tokens = in.n_tokens;
  const int64_t n_kv = in.n_kv;
  const int64_t hd = h.head_dim;
  const int64_t n_embd_kv = h.n_embd_kv();

  // Store this batch's keys and values in their cache cells.
  Tensor* k_all = ops::set_rows(g, kv.k, ops::reshape(g, k, {n_embd_kv, n_tokens, 1, 1}), in.kv_slots);
  Tensor* v_all = ops::set_rows(g, kv.v, ops::reshape(g, v, {n_embd_kv, n_tokens, 1, 1}), in.kv_slots);

  const size_t elt = dtype_traits(kv.k->type).type_size;
  const size_t row = kv.k->nb[1];
  // keys and values: [head_dim, n_kv, n_head_kv]
  Tensor* keys = ops::view(g, k_all, {hd, n_kv, h.n_head_kv, 1}, {elt, row, hd * elt, row * n_kv}, 0);
  Tensor* values = ops::view(g, v_all, {hd, n_kv, h.n_head_kv, 1}, {elt, row, hd * elt, row * n_kv}, 0);

  Tensor* qh = ops::permute(g, q, 0, 2, 1, 3);  // [head_dim, n_tokens, n_head]
  // [head_dim, n_head, n_tokens]
  Tensor* merged = ops::attention(g, qh, keys, values, in.kq_mask, 1.0f / std::sqrt(float(hd)));
  return ops::reshape(g, merged, {h.n_embd_q(), n_tokens, 1, 1});
}

Tensor* ffn_swiglu(Graph& g, Tensor* x, Tensor* gate, Tensor* up, Tensor* down) {
  Tensor* act = ops::mul(g, ops::silu(g, ops::mul_mat(g, gate, x)), ops::mul_mat(g, up, x));
  return ops::mul_mat(g, down, act);
}

}  // namespace tessera
