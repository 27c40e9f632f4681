// Gradient rules of the ops that move data: view, reshape, permute, transpose, cont,
// concat, get_rows.
#include <variant>

#include "core/ops.h"
#include "train/grad_rules.h"

namespace tessera::train {
namespace {

// Bytes from the start of a's memory to the view's first element.
size_t offset_in_source(const Tensor* view, const Tensor* a) {
  return view->view_offset - (a->view_src ? a->view_offset : 0);
}

// A view is a window of its source a: its gradient goes into that window of a's
// gradient. a must be dense, so that the window's strides in a's memory are strides in
// its dense gradient too; a view that is a reshape of all of a is just reshaped back.
// A view of a strided view (attention's token rows of a fused projection's v rows) is a
// window of the dense tensor that owns the memory: its gradient goes there directly, as
// a's own gradient (from a's other consumers) does through a's rule.
Status view_grad(GradContext& c, Tensor* node, Tensor* d) {
  Tensor* a = node->src[0];
  if (!a->is_contiguous()) {
    Tensor* owner = node->view_src;
    if (!op_is_view(a->op) || owner == nullptr || !owner->is_contiguous()) {
      return Status::error("backward: a view of the strided tensor '" + a->name + "' has no gradient");
    }
    c.accumulate_window(owner, d, node->nb, node->view_offset);
    return Status::ok();
  }
  const size_t offset = offset_in_source(node, a);
  if (offset == 0 && node->is_contiguous() && node->nelements() == a->nelements()) {
    c.accumulate(a, ops::reshape(c.graph(), d, a->ne));
  } else {
    c.accumulate_window(a, d, node->nb, offset);
  }
  return Status::ok();
}

Status reshape_grad(GradContext& c, Tensor* node, Tensor* d) {
  c.accumulate(node->src[0], ops::reshape(c.graph(), d, node->src[0]->ne));
  return Status::ok();
}

// Source dim i went to position axes[i]: the inverse sends position axes[i] back to i.
Status permute_grad(GradContext& c, Tensor* node, Tensor* d) {
  const auto& axes = std::get<PermuteParams>(node->params).axes;
  int inv[kMaxDims];
  for (int i = 0; i < kMaxDims; ++i) inv[axes[size_t(i)]] = i;
  Graph& g = c.graph();
  c.accumulate(node->src[0], dense(g, ops::permute(g, d, inv[0], inv[1], inv[2], inv[3])));
  return Status::ok();
}

Status cont_grad(GradContext& c, Tensor* node, Tensor* d) {
  if (node->src[0]->type != DType::F32) {
    return Status::error("backward: a type-converting cont has no gradient");
  }
  c.accumulate(node->src[0], d);  // same logical shape, d dense
  return Status::ok();
}

// Each operand's gradient is its slice of d along the joined dim.
Status concat_grad(GradContext& c, Tensor* node, Tensor* d) {
  Graph& g = c.graph();
  const int dim = std::get<ConcatParams>(node->params).dim;
  Tensor* a = node->src[0];
  Tensor* b = node->src[1];
  if (c.needs(a)) c.accumulate(a, dense(g, ops::view(g, d, a->ne, d->nb, 0)));
  if (c.needs(b)) {
    c.accumulate(b, dense(g, ops::view(g, d, b->ne, d->nb, size_t(a->ne[dim]) * d->nb[dim])));
  }
  return Status::ok();
}

Status get_rows_grad(GradContext& c, Tensor* node, Tensor* d) {
  Tensor* a = node->src[0];
  c.accumulate(a, ops::get_rows_back(c.graph(), d, node->src[1], a->ne[1]));
  return Status::ok();
}

}  // namespace

GradRule view_rule(Op op) {
  switch (op) {
    case Op::View: return view_grad;
    case Op::Reshape: return reshape_grad;
    case Op::Permute:
    case Op::Transpose: return permute_grad;
    case Op::Cont: return cont_grad;
    case Op::Concat: return concat_grad;
    case Op::GetRows: return get_rows_grad;
    default: return nullptr;
  }
}

}  // namespace tessera::train
