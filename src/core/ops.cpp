#include "core/ops.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/check.h"

namespace tessera::ops {
namespace {

Tensor* new_node(Graph& g, Op op, DType type, const Shape& ne, Tensor* a, Tensor* b = nullptr,
                 Tensor* c = nullptr) {
  Tensor* t = g.arena().new_tensor(type, ne);
  t->op = op;
  t->src = {a, b, c};
  return t;
}

Tensor* new_view(Graph& g, Op op, Tensor* a, const Shape& ne, const Strides& nb, size_t offset) {
  Tensor* t = new_node(g, op, a->type, ne, a);
  t->nb = nb;
  // A view of a view points at the memory's owner.
  t->view_src = a->view_src ? a->view_src : a;
  t->view_offset = (a->view_src ? a->view_offset : 0) + offset;
  return t;
}

bool can_broadcast(const Tensor* a, const Tensor* b) {
  for (int i = 0; i < kMaxDims; ++i) {
    if (b->ne[i] == 0 || a->ne[i] % b->ne[i] != 0) return false;
  }
  return true;
}

Tensor* unary(Graph& g, Op op, Tensor* a) {
  TESSERA_CHECK(a->type == DType::F32);
  return new_node(g, op, DType::F32, a->ne, a);
}

Tensor* binary(Graph& g, Op op, Tensor* a, Tensor* b) {
  TESSERA_CHECK(a->type == DType::F32 && b->type == DType::F32);
  TESSERA_CHECK_MSG(can_broadcast(a, b), "b cannot be broadcast to a");
  return new_node(g, op, DType::F32, a->ne, a, b);
}

}  // namespace

Tensor* get_rows(Graph& g, Tensor* a, Tensor* ids) {
  TESSERA_CHECK(ids->type == DType::I32 && ids->ne[1] == 1 && ids->ne[2] == 1 && ids->ne[3] == 1);
  TESSERA_CHECK(a->ne[2] == 1 && a->ne[3] == 1);
  return new_node(g, Op::GetRows, DType::F32, {a->ne[0], ids->ne[0], 1, 1}, a, ids);
}

Tensor* set_rows(Graph& g, Tensor* dst, Tensor* src, Tensor* ids) {
  TESSERA_CHECK(ids->type == DType::I32 && ids->nelements() == src->ne[1]);
  TESSERA_CHECK(src->type == DType::F32 && src->ne[0] == dst->ne[0]);
  TESSERA_CHECK(src->ne[2] == 1 && src->ne[3] == 1 && dst->ne[2] == 1 && dst->ne[3] == 1);
  Tensor* t = new_view(g, Op::SetRows, dst, dst->ne, dst->nb, 0);
  t->src = {dst, src, ids};
  return t;
}

Tensor* add(Graph& g, Tensor* a, Tensor* b) { return binary(g, Op::Add, a, b); }
Tensor* mul(Graph& g, Tensor* a, Tensor* b) { return binary(g, Op::Mul, a, b); }

Tensor* scale(Graph& g, Tensor* a, float s) {
  Tensor* t = unary(g, Op::Scale, a);
  t->params = ScaleParams{s};
  return t;
}

Tensor* mul_mat(Graph& g, Tensor* a, Tensor* b) {
  TESSERA_CHECK_MSG(a->ne[0] == b->ne[0], "mul_mat: inner dimensions differ");
  TESSERA_CHECK(b->type == DType::F32);
  TESSERA_CHECK(b->ne[2] % a->ne[2] == 0 && b->ne[3] % a->ne[3] == 0);
  return new_node(g, Op::MulMat, DType::F32, {a->ne[1], b->ne[1], b->ne[2], b->ne[3]}, a, b);
}

Tensor* rms_norm(Graph& g, Tensor* a, float eps) {
  Tensor* t = unary(g, Op::RmsNorm, a);
  t->params = NormParams{eps};
  return t;
}

Tensor* norm(Graph& g, Tensor* a, float eps) {
  Tensor* t = unary(g, Op::Norm, a);
  t->params = NormParams{eps};
  return t;
}

Tensor* rope(Graph& g, Tensor* a, Tensor* pos, int n_dims, RopeMode mode, float freq_base,
             float freq_scale, Tensor* freq_factors, const RopeYarn& yarn) {
  TESSERA_CHECK(a->type == DType::F32 && pos->type == DType::I32);
  TESSERA_CHECK(std::isfinite(yarn.ext_factor) && std::isfinite(yarn.attn_factor));
  TESSERA_CHECK(yarn.ext_factor == 0.0f || (yarn.n_ctx_orig > 0 && freq_scale > 0.0f));
  TESSERA_CHECK(pos->nelements() == a->ne[2] && a->ne[3] == 1);
  TESSERA_CHECK(n_dims % 2 == 0 && n_dims <= a->ne[0]);
  if (freq_factors) {
    TESSERA_CHECK(freq_factors->type == DType::F32 && freq_factors->nelements() >= n_dims / 2 &&
                  freq_factors->is_contiguous());
  }
  Tensor* t = new_node(g, Op::Rope, DType::F32, a->ne, a, pos, freq_factors);
  t->params = RopeParams{n_dims, mode, freq_base, freq_scale, false, yarn};
  return t;
}

Tensor* soft_max(Graph& g, Tensor* a, Tensor* mask, float scale) {
  TESSERA_CHECK(a->type == DType::F32);
  if (mask) {
    TESSERA_CHECK(mask->type == DType::F32 && mask->ne[0] == a->ne[0] && mask->ne[1] >= a->ne[1]);
    TESSERA_CHECK(mask->ne[2] == 1 && mask->ne[3] == 1);
  }
  Tensor* t = new_node(g, Op::SoftMax, DType::F32, a->ne, a, mask);
  t->params = SoftMaxParams{scale};
  return t;
}

Tensor* silu(Graph& g, Tensor* a) { return unary(g, Op::Silu, a); }
Tensor* gelu(Graph& g, Tensor* a) { return unary(g, Op::Gelu, a); }
Tensor* relu_sqr(Graph& g, Tensor* a) { return unary(g, Op::ReluSqr, a); }

Tensor* clamp(Graph& g, Tensor* a, float lo, float hi) {
  TESSERA_CHECK(lo <= hi);
  Tensor* t = unary(g, Op::Clamp, a);
  t->params = ClampParams{lo, hi};
  return t;
}

Tensor* softcap(Graph& g, Tensor* a, float cap) {
  TESSERA_CHECK(cap > 0 && std::isfinite(cap));
  Tensor* t = unary(g, Op::Softcap, a);
  t->params = ScaleParams{cap};
  return t;
}

Tensor* cpy(Graph& g, Tensor* a, Tensor* b) {
  TESSERA_CHECK(a->nelements() == b->nelements());
  Tensor* t = new_view(g, Op::Cpy, b, b->ne, b->nb, 0);
  t->src = {a, b, nullptr};
  return t;
}

Tensor* cont(Graph& g, Tensor* a, DType type) { return new_node(g, Op::Cont, type, a->ne, a); }

namespace {

void check_attention(const Tensor* q, const Tensor* k, const Tensor* v, const Tensor* mask,
                     float max_bias, float softcap) {
  TESSERA_CHECK(softcap >= 0 && std::isfinite(softcap));
  const int64_t hd = q->ne[0];
  TESSERA_CHECK(q->type == DType::F32);  // K and V: any cache types, each its own
  TESSERA_CHECK(k->ne[0] == hd && v->ne[0] > 0 && k->ne[1] == v->ne[1] && k->ne[2] == v->ne[2]);
  TESSERA_CHECK(q->ne[3] == 1 && k->ne[3] == 1 && v->ne[3] == 1 && q->ne[2] % k->ne[2] == 0);
  if (mask) {
    TESSERA_CHECK(mask->type == DType::F32 && mask->ne[0] == k->ne[1] && mask->ne[1] >= q->ne[1]);
  }
  TESSERA_CHECK(max_bias >= 0 && (max_bias == 0 || mask != nullptr));
}

}  // namespace

Tensor* attention(Graph& g, Tensor* q, Tensor* k, Tensor* v, Tensor* mask, float scale,
                  float max_bias, float softcap) {
  check_attention(q, k, v, mask, max_bias, softcap);
  Tensor* t = new_node(g, Op::Attention, DType::F32, {v->ne[0], q->ne[2], q->ne[1], 1}, q, k, v);
  t->src[3] = mask;
  t->params = AttentionParams{scale, max_bias, softcap};
  return t;
}

Tensor* concat(Graph& g, Tensor* a, Tensor* b, int dim) {
  TESSERA_CHECK(dim >= 0 && dim < kMaxDims && a->type == b->type && a->type == DType::F32);
  Shape ne = a->ne;
  for (int i = 0; i < kMaxDims; ++i) {
    if (i != dim) TESSERA_CHECK(a->ne[i] == b->ne[i]);
  }
  ne[dim] += b->ne[dim];
  Tensor* t = new_node(g, Op::Concat, DType::F32, ne, a, b);
  t->params = ConcatParams{dim};
  return t;
}

Tensor* sigmoid(Graph& g, Tensor* a) { return unary(g, Op::Sigmoid, a); }
Tensor* div(Graph& g, Tensor* a, Tensor* b) { return binary(g, Op::Div, a, b); }

Tensor* sum_rows(Graph& g, Tensor* a) {
  TESSERA_CHECK(a->type == DType::F32);
  return new_node(g, Op::SumRows, DType::F32, {1, a->ne[1], a->ne[2], a->ne[3]}, a);
}

Tensor* top_k(Graph& g, Tensor* a, int k) {
  TESSERA_CHECK(a->type == DType::F32 && k >= 1 && k <= a->ne[0]);
  Tensor* t = new_node(g, Op::TopK, DType::I32, {k, a->ne[1], a->ne[2], a->ne[3]}, a);
  t->params = TopKParams{k};
  return t;
}

Tensor* take_along(Graph& g, Tensor* a, Tensor* ids) {
  TESSERA_CHECK(a->type == DType::F32 && ids->type == DType::I32);
  TESSERA_CHECK(ids->ne[1] == a->ne[1] && ids->ne[2] == a->ne[2] && ids->ne[3] == a->ne[3]);
  return new_node(g, Op::TakeAlong, DType::F32, ids->ne, a, ids);
}

Tensor* mul_mat_id(Graph& g, Tensor* as, Tensor* b, Tensor* ids) {
  TESSERA_CHECK_MSG(as->ne[0] == b->ne[0], "mul_mat_id: inner dimensions differ");
  TESSERA_CHECK(b->type == DType::F32 && ids->type == DType::I32 && as->ne[3] == 1);
  TESSERA_CHECK(ids->ne[2] == 1 && ids->ne[3] == 1 && b->ne[3] == 1);
  TESSERA_CHECK_MSG(b->ne[2] == ids->ne[1], "mul_mat_id: one id row per token");
  TESSERA_CHECK_MSG(b->ne[1] == ids->ne[0] || b->ne[1] == 1, "mul_mat_id: activations per id, or one per token");
  return new_node(g, Op::MulMatId, DType::F32, {as->ne[1], ids->ne[0], ids->ne[1], 1}, as, b, ids);
}

namespace {

// The window of b (extents b.ne, strides nb, offset) lies inside a dense F32 [ne].
bool window_fits(const Shape& ne, const Tensor* b, const Strides& nb, size_t offset) {
  size_t last = offset;
  for (int i = 0; i < kMaxDims; ++i) {
    if (b->ne[i] == 0) return true;
    last += size_t(b->ne[i] - 1) * nb[i];
  }
  return offset % sizeof(float) == 0 && last + sizeof(float) <= size_t(ne[0] * ne[1] * ne[2] * ne[3]) * sizeof(float);
}

Tensor* acc_node(Graph& g, Tensor* a, const Shape& ne, Tensor* b, const Strides& nb, size_t offset) {
  TESSERA_CHECK(b->type == DType::F32 && (a == nullptr || a->type == DType::F32));
  TESSERA_CHECK_MSG(window_fits(ne, b, nb, offset), "acc: the window lies outside the result");
  for (size_t s : nb) TESSERA_CHECK(s % sizeof(float) == 0);
  Tensor* t = new_node(g, Op::Acc, DType::F32, ne, a, b);
  t->params = AccParams{nb, offset};
  return t;
}

}  // namespace

Tensor* acc(Graph& g, Tensor* a, Tensor* b, const Strides& nb, size_t offset) {
  return acc_node(g, a, a->ne, b, nb, offset);
}

Tensor* acc_zeros(Graph& g, const Shape& ne, Tensor* b, const Strides& nb, size_t offset) {
  return acc_node(g, nullptr, ne, b, nb, offset);
}

Tensor* sum_to(Graph& g, Tensor* a, const Shape& ne) {
  TESSERA_CHECK(a->type == DType::F32);
  for (int i = 0; i < kMaxDims; ++i) TESSERA_CHECK(ne[i] > 0 && a->ne[i] % ne[i] == 0);
  return new_node(g, Op::SumTo, DType::F32, ne, a);
}

Tensor* get_rows_back(Graph& g, Tensor* dy, Tensor* ids, int64_t n_rows) {
  TESSERA_CHECK(dy->type == DType::F32 && ids->type == DType::I32);
  TESSERA_CHECK(ids->nelements() == dy->ne[1] && dy->ne[2] == 1 && dy->ne[3] == 1 && n_rows > 0);
  return new_node(g, Op::GetRowsBack, DType::F32, {dy->ne[0], n_rows, 1, 1}, dy, ids);
}

Tensor* take_along_back(Graph& g, Tensor* dy, Tensor* ids, int64_t ne0) {
  TESSERA_CHECK(dy->type == DType::F32 && ids->type == DType::I32 && dy->same_shape(*ids) && ne0 > 0);
  return new_node(g, Op::TakeAlongBack, DType::F32, {ne0, ids->ne[1], ids->ne[2], ids->ne[3]}, dy, ids);
}

Tensor* rms_norm_back(Graph& g, Tensor* x, Tensor* dy, float eps) {
  TESSERA_CHECK(x->type == DType::F32 && dy->type == DType::F32 && x->same_shape(*dy));
  Tensor* t = new_node(g, Op::RmsNormBack, DType::F32, x->ne, x, dy);
  t->params = NormParams{eps};
  return t;
}

Tensor* soft_max_back(Graph& g, Tensor* dy, Tensor* y, float scale) {
  TESSERA_CHECK(dy->type == DType::F32 && y->type == DType::F32 && dy->same_shape(*y));
  Tensor* t = new_node(g, Op::SoftMaxBack, DType::F32, y->ne, dy, y);
  t->params = SoftMaxParams{scale};
  return t;
}

Tensor* silu_back(Graph& g, Tensor* x, Tensor* dy) {
  TESSERA_CHECK(x->type == DType::F32 && dy->type == DType::F32 && x->same_shape(*dy));
  return new_node(g, Op::SiluBack, DType::F32, x->ne, x, dy);
}

Tensor* rope_back(Graph& g, Tensor* dy, Tensor* pos, int n_dims, RopeMode mode, float freq_base,
                  float freq_scale, Tensor* freq_factors, const RopeYarn& yarn) {
  Tensor* t = rope(g, dy, pos, n_dims, mode, freq_base, freq_scale, freq_factors, yarn);
  std::get<RopeParams>(t->params).inverse = true;
  return t;
}

AttentionGrads attention_back(Graph& g, Tensor* q, Tensor* k, Tensor* v, Tensor* mask,
                              Tensor* dout, float scale, float max_bias, float softcap) {
  TESSERA_CHECK(q->type == DType::F32 && k->type == DType::F32 && v->type == DType::F32);
  TESSERA_CHECK(dout->type == DType::F32 && dout->ne[0] == q->ne[0] && dout->ne[1] == q->ne[2] &&
                dout->ne[2] == q->ne[1] && dout->ne[3] == 1);
  check_attention(q, k, v, mask, max_bias, softcap);
  TESSERA_CHECK_MSG(v->ne[0] == q->ne[0], "attention_back: values of another head size than the keys");
  const int64_t n_q = q->ne[0] * q->ne[1] * q->ne[2];
  const int64_t n_k = k->ne[0] * k->ne[1] * k->ne[2];
  Tensor* packed = new_node(g, Op::AttentionBack, DType::F32, {n_q + 2 * n_k, 1, 1, 1}, q, k, v);
  packed->src[3] = mask;
  packed->src[4] = dout;
  packed->params = AttentionParams{scale, max_bias, softcap};
  auto part = [&](const Shape& ne, int64_t first) {
    return view(g, packed, ne, contiguous_strides(DType::F32, ne), size_t(first) * sizeof(float));
  };
  return {part({q->ne[0], q->ne[1], q->ne[2], 1}, 0), part({k->ne[0], k->ne[1], k->ne[2], 1}, n_q),
          part({k->ne[0], k->ne[1], k->ne[2], 1}, n_q + n_k)};
}

Tensor* cross_entropy(Graph& g, Tensor* logits, Tensor* targets) {
  TESSERA_CHECK(logits->type == DType::F32 && targets->type == DType::I32);
  TESSERA_CHECK(logits->ne[2] == 1 && logits->ne[3] == 1 && targets->nelements() == logits->ne[1]);
  return new_node(g, Op::CrossEntropy, DType::F32, {1, 1, 1, 1}, logits, targets);
}

Tensor* cross_entropy_back(Graph& g, Tensor* logits, Tensor* targets, Tensor* dloss) {
  TESSERA_CHECK(logits->type == DType::F32 && targets->type == DType::I32);
  TESSERA_CHECK(logits->ne[2] == 1 && logits->ne[3] == 1 && targets->nelements() == logits->ne[1]);
  TESSERA_CHECK(dloss->type == DType::F32 && dloss->nelements() == 1);
  return new_node(g, Op::CrossEntropyBack, DType::F32, logits->ne, logits, targets, dloss);
}

Tensor* view(Graph& g, Tensor* a, const Shape& ne, const Strides& nb, size_t offset) {
  return new_view(g, Op::View, a, ne, nb, offset);
}

Tensor* reshape(Graph& g, Tensor* a, const Shape& ne) {
  TESSERA_CHECK(a->is_contiguous());
  TESSERA_CHECK(ne[0] * ne[1] * ne[2] * ne[3] == a->nelements());
  return new_view(g, Op::Reshape, a, ne, contiguous_strides(a->type, ne), 0);
}

Tensor* permute(Graph& g, Tensor* a, int ax0, int ax1, int ax2, int ax3) {
  const int axes[kMaxDims] = {ax0, ax1, ax2, ax3};
  Shape ne{};
  Strides nb{};
  int seen = 0;
  for (int i = 0; i < kMaxDims; ++i) {
    TESSERA_CHECK(axes[i] >= 0 && axes[i] < kMaxDims);
    seen |= 1 << axes[i];
    ne[axes[i]] = a->ne[i];
    nb[axes[i]] = a->nb[i];
  }
  TESSERA_CHECK_MSG(seen == 0xf, "permute: axes must be a permutation");
  Tensor* t = new_view(g, Op::Permute, a, ne, nb, 0);
  t->params = PermuteParams{{int8_t(ax0), int8_t(ax1), int8_t(ax2), int8_t(ax3)}};
  return t;
}

Tensor* transpose(Graph& g, Tensor* a) {
  Tensor* t = permute(g, a, 1, 0, 2, 3);
  t->op = Op::Transpose;
  return t;
}

}  // namespace tessera::ops

namespace tessera {
std::string_view op_name(Op op) {
  static constexpr std::string_view kNames[] = {
      "none", "get_rows", "set_rows", "add",  "mul",  "scale",  "mul_mat",
      "rms_norm", "norm", "rope",     "soft_max", "silu", "gelu", "relu_sqr", "clamp", "softcap", "cpy",
      "cont", "concat", "attention", "sigmoid", "div", "sum_rows", "top_k", "take_along", "mul_mat_id",
      "acc", "sum_to", "get_rows_back", "take_along_back", "rms_norm_back",
      "soft_max_back", "silu_back", "attention_back", "cross_entropy", "cross_entropy_back",
      "view", "reshape", "permute", "transpose"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == size_t(Op::Count));
  return kNames[size_t(op)];
}

float RopeYarn::magnitude(float freq_scale) const {
  return ext_factor != 0.0f ? attn_factor * (1.0f + 0.1f * std::log(1.0f / freq_scale)) : attn_factor;
}

void RopeYarn::corr_dims(int n_dims, float freq_base, float dims[2]) const {
  // The pair whose wavelength fits n_rot turns into n_ctx_orig positions (ggml's
  // ggml_rope_yarn_corr_dim), for beta_fast and beta_slow turns.
  auto corr_dim = [&](float n_rot) {
    return float(n_dims) * std::log(float(n_ctx_orig) / (n_rot * 2.0f * std::numbers::pi_v<float>)) / (2.0f * std::log(freq_base));
  };
  dims[0] = std::max(0.0f, std::floor(corr_dim(beta_fast)));
  dims[1] = std::min(float(n_dims - 1), std::ceil(corr_dim(beta_slow)));
}

float alibi_slope(int64_t h, int64_t n_head, float max_bias) {
  int64_t n_pow2 = 1;  // the largest power of two <= n_head
  while (n_pow2 * 2 <= n_head) n_pow2 *= 2;
  const double m0 = std::pow(2.0, -double(max_bias) / double(n_pow2));
  const double m1 = std::pow(2.0, -double(max_bias) / 2.0 / double(n_pow2));
  return float(h < n_pow2 ? std::pow(m0, double(h + 1)) : std::pow(m1, double(2 * (h - n_pow2) + 1)));
}

}  // namespace tessera
