// Graph builders: each adds one node to a graph and returns it. Shapes are checked
// here (a bad shape is a bug in the caller, so it is a CHECK); computing happens later
// on a backend.
#pragma once

#include "core/graph.h"

namespace tessera::ops {

/// Rows of `a` selected by `ids` (I32, [n]) -> F32 [a.ne0, n].
Tensor* get_rows(Graph& g, Tensor* a, Tensor* ids);
/// Writes the rows of `src` (F32 [dst.ne0, n]) into `dst` at `ids` (I32 [n]), converting
/// to dst's type. Returns a tensor standing for `dst` after the write.
Tensor* set_rows(Graph& g, Tensor* dst, Tensor* src, Tensor* ids);
/// Elementwise a + b, b broadcast (each b.ne[i] divides a.ne[i]).
Tensor* add(Graph& g, Tensor* a, Tensor* b);
/// Elementwise a * b, b broadcast.
Tensor* mul(Graph& g, Tensor* a, Tensor* b);
Tensor* scale(Graph& g, Tensor* a, float s);
/// a: [K, M, A2, A3] (F32/F16/BF16), b: [K, N, B2, B3] F32 -> F32 [M, N, B2, B3];
/// result[m, n] = dot(a row m, b row n). B2 % A2 == 0 and B3 % A3 == 0 (GQA broadcast).
Tensor* mul_mat(Graph& g, Tensor* a, Tensor* b);
Tensor* rms_norm(Graph& g, Tensor* a, float eps);
Tensor* norm(Graph& g, Tensor* a, float eps);
/// a: [head_dim, n_head, n_tokens, 1], pos: I32 [n_tokens]. Pair i (< n_dims / 2) turns by
/// pos * freq_scale * freq_base^(-2i / n_dims) / freq_factors[i] (freq_factors: optional F32
/// [>= n_dims / 2], e.g. Llama 3's rope_freqs); dims past n_dims pass through. `yarn`
/// (ggml's rope_ext): YaRN's ramp between that angle and the unscaled one, and the
/// magnitude cos and sin are multiplied by (RopeYarn in core/op.h).
Tensor* rope(Graph& g, Tensor* a, Tensor* pos, int n_dims, RopeMode mode, float freq_base,
             float freq_scale, Tensor* freq_factors = nullptr, const RopeYarn& yarn = {});
/// softmax(a * scale + mask) along dim 0; mask F32 [a.ne0, >= a.ne1] broadcast over dims 2-3.
Tensor* soft_max(Graph& g, Tensor* a, Tensor* mask, float scale);
Tensor* silu(Graph& g, Tensor* a);
Tensor* gelu(Graph& g, Tensor* a);
/// max(a, 0)^2.
Tensor* relu_sqr(Graph& g, Tensor* a);
/// min(max(a, lo), hi).
Tensor* clamp(Graph& g, Tensor* a, float lo, float hi);
/// cap * tanh(a / cap), cap > 0: Gemma 2's soft-capping of logits.
Tensor* softcap(Graph& g, Tensor* a, float cap);
/// Copies a into b's layout and type (same element count); the result stands for b.
Tensor* cpy(Graph& g, Tensor* a, Tensor* b);
/// A contiguous copy of a, converted to `type`.
Tensor* cont(Graph& g, Tensor* a, DType type = DType::F32);
Tensor* concat(Graph& g, Tensor* a, Tensor* b, int dim);
/// Attention of every query head over its KV head (grouped-query: n_head a multiple of
/// n_head_kv): out[:, h, t] = sum_c softmax_c(scale q[:, t, h] . k[:, c, hk] + mask[c, t]) v[:, c, hk]
/// with hk = h / (n_head / n_head_kv). q F32 [head_dim, n_tokens, n_head] (any strides),
/// k [head_dim, n_kv, n_head_kv] and v [head_dim_v, n_kv, n_head_kv] of any KV cache type
/// each (dense rows; quantized: whole blocks per head; head_dim_v may differ from
/// head_dim: DeepSeek's MLA), mask F32
/// [n_kv, >= n_tokens] or null. Result F32 [head_dim_v, n_head, n_tokens], contiguous. A token that sees no
/// cell gets zeros. max_bias > 0 is ALiBi: head h adds alibi_slope(h, n_head, max_bias) *
/// mask instead of mask (the mask then holds -|query pos - cell pos| where visible).
/// softcap > 0 caps each score before the mask: softcap tanh(scale q . k / softcap).
Tensor* attention(Graph& g, Tensor* q, Tensor* k, Tensor* v, Tensor* mask, float scale,
                  float max_bias = 0.0f, float softcap = 0.0f);

// --- Mixture-of-experts routing and experts. ---

/// 1 / (1 + exp(-a)).
Tensor* sigmoid(Graph& g, Tensor* a);
/// Elementwise a / b, b broadcast.
Tensor* div(Graph& g, Tensor* a, Tensor* b);
/// The sum of each row of a (F32): [1, a.ne1, a.ne2, a.ne3], summed in order.
Tensor* sum_rows(Graph& g, Tensor* a);
/// The I32 ids of the k largest elements of each row of a (F32), largest first; equal
/// values in id order: [k, a.ne1, a.ne2, a.ne3].
Tensor* top_k(Graph& g, Tensor* a, int k);
/// result[i, r] = a[ids[i, r], r] for a F32 [n, rows...] and ids I32 [k, rows...] (the
/// same rows): each row's elements at its ids (the router weights of the chosen experts).
Tensor* take_along(Graph& g, Tensor* a, Tensor* ids);
/// The experts' products: as [K, M, n_expert] (one weight matrix per plane), b F32
/// [K, n_b, n_tokens] with n_b = n_used or 1 (one row for every id of the token), ids I32
/// [n_used, n_tokens] -> F32 [M, n_used, n_tokens]:
/// result[:, i, t] = as[:, :, ids[i, t]] b[:, i % n_b, t]. The ids must be < n_expert.
Tensor* mul_mat_id(Graph& g, Tensor* as, Tensor* b, Tensor* ids);

// --- The ops of backward graphs (src/train). Results are F32 and contiguous. ---

/// A contiguous copy of a (F32 [ne]) with b added into the window of it that has b's
/// extents, the byte strides nb and the byte offset `offset` (the gradient of a view).
Tensor* acc(Graph& g, Tensor* a, Tensor* b, const Strides& nb, size_t offset);
/// The same over zeros of shape ne.
Tensor* acc_zeros(Graph& g, const Shape& ne, Tensor* b, const Strides& nb, size_t offset);
/// a summed down to shape ne (each ne[i] divides a.ne[i]): element i is the sum of the
/// elements j of a with j[d] % ne[d] == i[d] in every dim d (the gradient of a broadcast).
Tensor* sum_to(Graph& g, Tensor* a, const Shape& ne);
/// Zeros [dy.ne0, n_rows] with row j of dy (F32 [ne0, n]) added into row ids[j] (I32 [n]):
/// the gradient of get_rows.
Tensor* get_rows_back(Graph& g, Tensor* dy, Tensor* ids, int64_t n_rows);
/// Zeros [ne0, rows of ids] with dy[i, r] added at element ids[i, r] of row r (dy F32 and
/// ids I32 of one shape): the gradient of take_along.
Tensor* take_along_back(Graph& g, Tensor* dy, Tensor* ids, int64_t ne0);
/// d x of rms_norm(x, eps) given d y (both F32, x's shape).
Tensor* rms_norm_back(Graph& g, Tensor* x, Tensor* dy, float eps);
/// d x of y = soft_max(x, mask, scale) given d y and y: scale * y * (dy - sum(dy * y)).
Tensor* soft_max_back(Graph& g, Tensor* dy, Tensor* y, float scale);
/// d x of silu(x) given d y.
Tensor* silu_back(Graph& g, Tensor* x, Tensor* dy);
/// d a of rope(a, pos, ...) given d y: the inverse rotation of d y (times the magnitude).
Tensor* rope_back(Graph& g, Tensor* dy, Tensor* pos, int n_dims, RopeMode mode, float freq_base,
                  float freq_scale, Tensor* freq_factors = nullptr, const RopeYarn& yarn = {});

/// The gradients of attention(q, k, v, mask, scale, max_bias, softcap), packed in one node.
struct AttentionGrads {
  Tensor* dq = nullptr;  // [head_dim, n_tokens, n_head]: q's logical shape
  Tensor* dk = nullptr;  // [head_dim, n_kv, n_head_kv]
  Tensor* dv = nullptr;  // [head_dim, n_kv, n_head_kv]
};
/// Given d out [head_dim, n_head, n_tokens] (attention's result shape; dense rows), for
/// F32 q, k, v of one head size. dq, dk and dv are contiguous views of one packed result [dq | dk | dv].
AttentionGrads attention_back(Graph& g, Tensor* q, Tensor* k, Tensor* v, Tensor* mask,
                              Tensor* dout, float scale, float max_bias = 0.0f, float softcap = 0.0f);

/// Cross-entropy of logits (F32 [n_vocab, n]) against targets (I32 [n]): the mean over
/// the rows n with targets[n] >= 0 of logsumexp(logits[:, n]) - logits[targets[n], n],
/// F32 [1] (0 when no row counts). Rows with a negative target are skipped.
Tensor* cross_entropy(Graph& g, Tensor* logits, Tensor* targets);
/// Its d logits given d loss (F32 [1]): (softmax(logits[:, n]) - onehot(targets[n])) *
/// dloss / count on the counted rows, 0 on the skipped ones.
Tensor* cross_entropy_back(Graph& g, Tensor* logits, Tensor* targets, Tensor* dloss);

/// A window into a with the given extents, strides and byte offset.
Tensor* view(Graph& g, Tensor* a, const Shape& ne, const Strides& nb, size_t offset);
/// Same data, other shape; a must be contiguous.
Tensor* reshape(Graph& g, Tensor* a, const Shape& ne);
/// Source dim i goes to position axes[i] of the result.
Tensor* permute(Graph& g, Tensor* a, int ax0, int ax1, int ax2, int ax3);
Tensor* transpose(Graph& g, Tensor* a);

}  // namespace tessera::ops
