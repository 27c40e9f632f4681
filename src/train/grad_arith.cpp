// Gradient rules of the arithmetic ops: add, mul, scale, mul_mat, rms_norm, rope,
// soft_max, silu.
#include <variant>

#include "core/ops.h"
#include "train/grad_rules.h"

namespace tessera::train {
namespace {

// d of a broadcast operand b: d summed over the dims b was repeated along.
Tensor* unbroadcast(Graph& g, Tensor* d, const Tensor* b) {
  return d->same_shape(*b) ? d : ops::sum_to(g, d, b->ne);
}

Status add_grad(GradContext& c, Tensor* node, Tensor* d) {
  c.accumulate(node->src[0], d);
  c.accumulate(node->src[1], unbroadcast(c.graph(), d, node->src[1]));
  return Status::ok();
}

Status mul_grad(GradContext& c, Tensor* node, Tensor* d) {
  Graph& g = c.graph();
  Tensor* a = node->src[0];
  Tensor* b = node->src[1];
  if (c.needs(a)) c.accumulate(a, ops::mul(g, d, b));
  if (c.needs(b)) c.accumulate(b, unbroadcast(g, ops::mul(g, d, a), b));
  return Status::ok();
}

Status scale_grad(GradContext& c, Tensor* node, Tensor* d) {
  c.accumulate(node->src[0], ops::scale(c.graph(), d, std::get<ScaleParams>(node->params).scale));
  return Status::ok();
}

// result[m, n] = sum_k a[k, m] b[k, n] per plane: d a[k, m] = sum_n b[k, n] d[m, n] and
// d b[k, n] = sum_m a[k, m] d[m, n], both as mul_mats over transposed copies. A frozen
// quantized a (a LoRA base) is dequantized first; only d b is then asked for.
Status mul_mat_grad(GradContext& c, Tensor* node, Tensor* d) {
  Graph& g = c.graph();
  Tensor* a = node->src[0];
  Tensor* b = node->src[1];
  if (c.needs(a)) {
    if (a->type != DType::F32) return Status::error("backward: mul_mat trains F32 weights only");
    if (a->ne[2] != b->ne[2] || a->ne[3] != b->ne[3]) {
      return Status::error("backward: mul_mat with a broadcast first operand has no weight gradient");
    }
    Tensor* bt = ops::cont(g, ops::transpose(g, b));  // [N, K]
    Tensor* dt = ops::cont(g, ops::transpose(g, d));  // [N, M]
    c.accumulate(a, ops::mul_mat(g, bt, dt));         // [K, M]
  }
  if (c.needs(b)) {
    Tensor* af = a->type == DType::F32 ? a : ops::cont(g, a, DType::F32);
    Tensor* at = ops::cont(g, ops::transpose(g, af));  // [M, K]
    c.accumulate(b, ops::mul_mat(g, at, d));            // [K, N]
  }
  return Status::ok();
}

Status rms_norm_grad(GradContext& c, Tensor* node, Tensor* d) {
  const float eps = std::get<NormParams>(node->params).eps;
  c.accumulate(node->src[0], ops::rms_norm_back(c.graph(), node->src[0], d, eps));
  return Status::ok();
}

Status rope_grad(GradContext& c, Tensor* node, Tensor* d) {
  const RopeParams rp = std::get<RopeParams>(node->params);
  if (rp.inverse) return Status::error("backward: no gradient of an inverse rope");
  c.accumulate(node->src[0], ops::rope_back(c.graph(), d, node->src[1], rp.n_dims, rp.mode,
                                            rp.freq_base, rp.freq_scale, node->src[2], rp.yarn));
  return Status::ok();
}

Status soft_max_grad(GradContext& c, Tensor* node, Tensor* d) {
  const float scale = std::get<SoftMaxParams>(node->params).scale;
  c.accumulate(node->src[0], ops::soft_max_back(c.graph(), d, node, scale));
  return Status::ok();
}

Status silu_grad(GradContext& c, Tensor* node, Tensor* d) {
  c.accumulate(node->src[0], ops::silu_back(c.graph(), node->src[0], d));
  return Status::ok();
}

}  // namespace

GradRule arith_rule(Op op) {
  switch (op) {
    case Op::Add: return add_grad;
    case Op::Mul: return mul_grad;
    case Op::Scale: return scale_grad;
    case Op::MulMat: return mul_mat_grad;
    case Op::RmsNorm: return rms_norm_grad;
    case Op::Rope: return rope_grad;
    case Op::SoftMax: return soft_max_grad;
    case Op::Silu: return silu_grad;
    default: return nullptr;
  }
}

}  // namespace tessera::train
