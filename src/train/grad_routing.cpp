// Gradient rules of the mixture-of-experts ops: sigmoid, div, sum_rows, take_along and
// mul_mat_id (top_k has none: its ids are piecewise constant in its input, so no gradient
// flows through the choice; it flows through the chosen probabilities, take_along's).
#include <variant>

#include "core/ops.h"
#include "train/grad_rules.h"

namespace tessera::train {
namespace {

// y = sigmoid(x): d x = d y y (1 - y) = t - t y with t = d y y.
Status sigmoid_grad(GradContext& c, Tensor* node, Tensor* d) {
  Graph& g = c.graph();
  Tensor* y = dense(g, node);
  Tensor* t = ops::mul(g, dense(g, d), y);
  c.accumulate(node->src[0], ops::add(g, t, ops::scale(g, ops::mul(g, t, y), -1.0f)));
  return Status::ok();
}

// y = a / b, b broadcast over a: d a = d y / b; d b = -(d y y / b) summed over the dims b
// was repeated along.
Status div_grad(GradContext& c, Tensor* node, Tensor* d) {
  Graph& g = c.graph();
  Tensor* a = node->src[0];
  Tensor* b = node->src[1];
  Tensor* dy = dense(g, d);
  if (c.needs(a)) c.accumulate(a, ops::div(g, dy, b));
  if (c.needs(b)) {
    Tensor* db = ops::scale(g, ops::div(g, ops::mul(g, dy, dense(g, node)), b), -1.0f);
    c.accumulate(b, db->same_shape(*b) ? db : ops::sum_to(g, db, b->ne));
  }
  return Status::ok();
}

// y = the sum of each row of x: d x is the row's d y in every element of the row (a
// contiguous copy of d y viewed with a zero stride along dim 0).
Status sum_rows_grad(GradContext& c, Tensor* node, Tensor* d) {
  Graph& g = c.graph();
  Tensor* x = node->src[0];
  Tensor* dy = dense(g, d);
  Tensor* spread = ops::view(g, dy, x->ne, {0, dy->nb[1], dy->nb[2], dy->nb[3]}, 0);
  c.accumulate(x, ops::cont(g, spread));
  return Status::ok();
}

// y[i, r] = a[ids[i, r], r]: d a is zeros with d y scattered back to the ids.
Status take_along_grad(GradContext& c, Tensor* node, Tensor* d) {
  Graph& g = c.graph();
  Tensor* a = node->src[0];
  c.accumulate(a, ops::take_along_back(g, dense(g, d), node->src[1], a->ne[0]));
  return Status::ok();
}

// result[:, i, t] = E[ids[i, t]] b[:, i or 0, t] with E's planes [K, M]: d b[:, i, t] =
// E[ids[i, t]]^T d[:, i, t], a mul_mat_id over the transposed experts (dequantized to
// F32), summed over the ids when b has one row per token. The experts are frozen: LoRA
// does not adapt them, so no rule asks for their gradient.
Status mul_mat_id_grad(GradContext& c, Tensor* node, Tensor* d) {
  Graph& g = c.graph();
  Tensor* experts = node->src[0];
  Tensor* b = node->src[1];
  if (c.needs(experts)) return Status::error("backward: mul_mat_id has no gradient for its experts (they are not trained)");
  if (!c.needs(b)) return Status::ok();
  Tensor* ef = experts->type == DType::F32 ? experts : ops::cont(g, experts, DType::F32);
  Tensor* et = ops::cont(g, ops::transpose(g, ef));  // [M, K, n_expert]
  Tensor* db = ops::mul_mat_id(g, et, dense(g, d), node->src[2]);  // [K, n_used, n_tokens]
  c.accumulate(b, db->same_shape(*b) ? db : ops::sum_to(g, db, b->ne));
  return Status::ok();
}

}  // namespace

GradRule routing_rule(Op op) {
  switch (op) {
    case Op::Sigmoid: return sigmoid_grad;
    case Op::Div: return div_grad;
    case Op::SumRows: return sum_rows_grad;
    case Op::TakeAlong: return take_along_grad;
    case Op::MulMatId: return mul_mat_id_grad;
    default: return nullptr;
  }
}

}  // namespace tessera::train
