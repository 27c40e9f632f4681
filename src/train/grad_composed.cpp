// Gradient rules composed of forward ops, for ops without a backward kernel of their own:
// norm (LayerNorm without its weight), gelu (the tanh approximation), relu_sqr and softcap.
#include <cmath>
#include <limits>
#include <variant>

#include "core/ops.h"
#include "train/grad_rules.h"

namespace tessera::train {
namespace {

// x minus the mean of its row (dim 0), as a broadcast add of the scaled row sums.
Tensor* centered(Graph& g, Tensor* x) {
  const Shape rows{1, x->ne[1], x->ne[2], x->ne[3]};
  return ops::add(g, x, ops::scale(g, ops::sum_to(g, x, rows), -1.0f / float(x->ne[0])));
}

// norm(x) = rms_norm(c) with c = x - mean(x) (the same variance and eps), and centering
// is a symmetric projection P: d x = P(rms_norm_back(c, d y)).
Status norm_grad(GradContext& c, Tensor* node, Tensor* d) {
  Graph& g = c.graph();
  const float eps = std::get<NormParams>(node->params).eps;
  Tensor* x = dense(g, node->src[0]);
  c.accumulate(node->src[0], centered(g, ops::rms_norm_back(g, centered(g, x), dense(g, d), eps)));
  return Status::ok();
}

// sigmoid(z) elementwise (z contiguous), as the first row of softmax over the pairs
// [z, 0]; also returns 1 - sigmoid(z), the second row.
struct Sigmoids {
  Tensor* s;
  Tensor* one_minus_s;
};
Sigmoids sigmoid_pair(Graph& g, Tensor* z) {
  const int64_t n = z->nelements();
  Tensor* zr = ops::reshape(g, z, {1, n, 1, 1});
  Tensor* sm = ops::soft_max(g, ops::concat(g, zr, ops::scale(g, zr, 0.0f), 0), nullptr, 1.0f);  // [2, n]
  auto row = [&](int64_t r) {
    Tensor* v = ops::view(g, sm, {1, n, 1, 1}, sm->nb, size_t(r) * sm->nb[0]);
    return ops::reshape(g, ops::cont(g, v), z->ne);
  };
  return {row(0), row(1)};
}

// gelu(x) = x s with s = sigmoid(2u), u = k (x + a x^3), k = sqrt(2 / pi), a = 0.044715.
// gelu'(x) = s + x s (1 - s) 2u' = s + s (1 - s) w with w = 2k (x + 3a x^3).
Status gelu_grad(GradContext& c, Tensor* node, Tensor* d) {
  Graph& g = c.graph();
  constexpr float kK = 0.7978845608028654f;
  constexpr float kA = 0.044715f;
  Tensor* x = dense(g, node->src[0]);
  Tensor* x3 = ops::mul(g, ops::mul(g, x, x), x);
  Tensor* z = ops::scale(g, ops::add(g, x, ops::scale(g, x3, kA)), 2.0f * kK);
  Tensor* w = ops::scale(g, ops::add(g, x, ops::scale(g, x3, 3.0f * kA)), 2.0f * kK);
  const Sigmoids sg = sigmoid_pair(g, z);
  Tensor* slope = ops::add(g, sg.s, ops::mul(g, ops::mul(g, sg.s, sg.one_minus_s), w));
  c.accumulate(node->src[0], ops::mul(g, dense(g, d), slope));
  return Status::ok();
}

// relu_sqr(x) = max(x, 0)^2: d x = 2 max(x, 0) d y, max(x, 0) being a clamp.
Status relu_sqr_grad(GradContext& c, Tensor* node, Tensor* d) {
  Graph& g = c.graph();
  Tensor* relu = ops::clamp(g, dense(g, node->src[0]), 0.0f, std::numeric_limits<float>::max());
  c.accumulate(node->src[0], ops::mul(g, dense(g, d), ops::scale(g, relu, 2.0f)));
  return Status::ok();
}

// y = cap tanh(x / cap): d x = d y (1 - tanh^2) = d y - d y y y / cap^2.
Status softcap_grad(GradContext& c, Tensor* node, Tensor* d) {
  Graph& g = c.graph();
  const float cap = std::get<ScaleParams>(node->params).scale;
  Tensor* dy = dense(g, d);
  Tensor* y = dense(g, node);
  c.accumulate(node->src[0], ops::add(g, dy, ops::scale(g, ops::mul(g, ops::mul(g, dy, y), y), -1.0f / (cap * cap))));
  return Status::ok();
}

}  // namespace

GradRule composed_rule(Op op) {
  switch (op) {
    case Op::Norm: return norm_grad;
    case Op::Gelu: return gelu_grad;
    case Op::ReluSqr: return relu_sqr_grad;
    case Op::Softcap: return softcap_grad;
    default: return nullptr;
  }
}

}  // namespace tessera::train
