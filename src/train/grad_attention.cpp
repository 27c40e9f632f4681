// Gradient rules of attention and of the cross-entropy loss: each a backward op of its
// own (attention_back recomputes the softmax rather than keeping it from the forward).
#include <variant>

#include "core/ops.h"
#include "train/grad_rules.h"

namespace tessera::train {
namespace {

Status attention_grad(GradContext& c, Tensor* node, Tensor* d) {
  Tensor* q = node->src[0];
  Tensor* k = node->src[1];
  Tensor* v = node->src[2];
  if (k->type != DType::F32 || v->type != DType::F32) {
    return Status::error("backward: attention over an F16 cache has no gradient (train without a KV cache)");
  }
  if (v->ne[0] > k->ne[0]) {
    return Status::error("backward: attention whose values have a larger head size than its keys has no gradient");
  }
  const AttentionParams ap = std::get<AttentionParams>(node->params);
  if (v->ne[0] == k->ne[0]) {
    const ops::AttentionGrads gr =
        ops::attention_back(c.graph(), q, k, v, node->src[3], d, ap.scale, ap.max_bias, ap.softcap);
    c.accumulate(q, gr.dq);
    c.accumulate(k, gr.dk);
    c.accumulate(v, gr.dv);
    return Status::ok();
  }
  // Values with a smaller head size than the keys (multi-head latent attention): the
  // values and the output's gradient padded with zeros to the keys' size, so that the one
  // backward op serves. The zeros add nothing to any dot product (dp = dout . v), and the
  // padded part of dv, which they alone produce, is dropped.
  Graph& g = c.graph();
  const int64_t hd = k->ne[0];
  const auto padded = [&](Tensor* t) {
    const Shape ne = {hd, t->ne[1], t->ne[2], t->ne[3]};
    const size_t e = sizeof(float);
    const Strides nb = {e, size_t(hd) * e, size_t(hd * t->ne[1]) * e, size_t(hd * t->ne[1] * t->ne[2]) * e};
    return ops::acc_zeros(g, ne, ops::cont(g, t), nb, 0);
  };
  const ops::AttentionGrads gr =
      ops::attention_back(g, q, k, padded(v), node->src[3], padded(d), ap.scale, ap.max_bias, ap.softcap);
  c.accumulate(q, gr.dq);
  c.accumulate(k, gr.dk);
  c.accumulate(v, ops::cont(g, ops::view(g, gr.dv, v->ne, gr.dv->nb, 0)));
  return Status::ok();
}

Status cross_entropy_grad(GradContext& c, Tensor* node, Tensor* d) {
  c.accumulate(node->src[0], ops::cross_entropy_back(c.graph(), node->src[0], node->src[1], d));
  return Status::ok();
}

}  // namespace

GradRule attention_rule(Op op) {
  switch (op) {
    case Op::Attention: return attention_grad;
    case Op::CrossEntropy: return cross_entropy_grad;
    default: return nullptr;
  }
}

}  // namespace tessera::train
