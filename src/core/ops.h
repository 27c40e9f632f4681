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
/// [>= n_dims / 2], e.g. Llama 3's rope_freqs); dims past n_dims pass through.
Tensor* rope(Graph& g, Tensor* a, Tensor* pos, int n_dims, RopeMode mode, float freq_base,
             float freq_scale, Tensor* freq_factors = nullptr);
/// softmax(a * scale + mask) along dim 0; mask F32 [a.ne0, >= a.ne1] broadcast over dims 2-3.
Tensor* soft_max(Graph& g, Tensor* a, Tensor* mask, float scale);
Tensor* silu(Graph& g, Tensor* a);
Tensor* gelu(Graph& g, Tensor* a);
/// max(a, 0)^2.
Tensor* relu_sqr(Graph& g, Tensor* a);
/// min(max(a, lo), hi).
Tensor* clamp(Graph& g, Tensor* a, float lo, float hi);
/// Copies a into b's layout and type (same element count); the result stands for b.
Tensor* cpy(Graph& g, Tensor* a, Tensor* b);
/// A contiguous copy of a, converted to `type`.
Tensor* cont(Graph& g, Tensor* a, DType type = DType::F32);
Tensor* concat(Graph& g, Tensor* a, Tensor* b, int dim);
/// Attention of every query head over its KV head (grouped-query: n_head a multiple of
/// n_head_kv): out[:, h, t] = sum_c softmax_c(scale q[:, t, h] . k[:, c, hk] + mask[c, t]) v[:, c, hk]
/// with hk = h / (n_head / n_head_kv). q F32 [head_dim, n_tokens, n_head] (any strides),
/// k and v F16/F32 [head_dim, n_kv, n_head_kv] (dense rows), mask F32 [n_kv, >= n_tokens]
/// or null. Result F32 [head_dim, n_head, n_tokens], contiguous. A token that sees no
/// cell gets zeros. max_bias > 0 is ALiBi: head h adds alibi_slope(h, n_head, max_bias) *
/// mask instead of mask (the mask then holds -|query pos - cell pos| where visible).
Tensor* attention(Graph& g, Tensor* q, Tensor* k, Tensor* v, Tensor* mask, float scale,
                  float max_bias = 0.0f);

/// A window into a with the given extents, strides and byte offset.
Tensor* view(Graph& g, Tensor* a, const Shape& ne, const Strides& nb, size_t offset);
/// Same data, other shape; a must be contiguous.
Tensor* reshape(Graph& g, Tensor* a, const Shape& ne);
/// Source dim i goes to position axes[i] of the result.
Tensor* permute(Graph& g, Tensor* a, int ax0, int ax1, int ax2, int ax3);
Tensor* transpose(Graph& g, Tensor* a);

}  // namespace tessera::ops
