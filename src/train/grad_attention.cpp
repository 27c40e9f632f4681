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
  if (v->ne[0] != k->ne[0]) {
    return Status::error("backward: attention whose values have another head size than its keys (multi-head latent "
                         "attention) has no gradient yet");
  }
  const AttentionParams ap = std::get<AttentionParams>(node->params);
  const ops::AttentionGrads gr = ops::attention_back(c.graph(), q, k, v, node->src[3], d, ap.scale, ap.max_bias, ap.softcap);
  c.accumulate(q, gr.dq);
  c.accumulate(k, gr.dk);
  c.accumulate(v, gr.dv);
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
