#include "train/backward.h"

#include <string>

#include "core/ops.h"
#include "train/grad_rules.h"

namespace tessera::train {

Tensor* GradContext::grad(const Tensor* t) const {
  auto it = grads_.find(t);
  return it == grads_.end() ? nullptr : it->second;
}

void GradContext::accumulate(const Tensor* t, Tensor* d) {
  if (!needs(t)) return;
  Tensor*& slot = grads_[t];
  slot = slot ? ops::add(g_, slot, d) : d;
}

void GradContext::accumulate_window(const Tensor* t, Tensor* d, const Strides& nb, size_t offset) {
  if (!needs(t)) return;
  Tensor*& slot = grads_[t];
  // Into the gradient so far (in place, as the allocator arranges), so that the windows
  // of many views of one tensor (attention groups, q/k/v rows) cost one buffer.
  slot = slot ? ops::acc(g_, slot, d, nb, offset) : ops::acc_zeros(g_, t->ne, d, nb, offset);
}

Tensor* dense(Graph& g, Tensor* t) { return t->is_contiguous() ? t : ops::cont(g, t); }

bool grad_flows_to(const Tensor* node, int src) {
  switch (node->op) {
    case Op::Add:
    case Op::Mul:
    case Op::MulMat:
    case Op::Concat:
    case Op::Div:
    case Op::MulMatId:  // not to the ids (src2)
      return src <= 1;
    case Op::Attention:
      return src <= 2;
    case Op::GetRows:
    case Op::Scale:
    case Op::RmsNorm:
    case Op::Norm:
    case Op::Rope:
    case Op::SoftMax:
    case Op::Silu:
    case Op::Gelu:
    case Op::ReluSqr:
    case Op::Softcap:
    case Op::Cont:
    case Op::CrossEntropy:
    case Op::View:
    case Op::Reshape:
    case Op::Permute:
    case Op::Transpose:
    case Op::Sigmoid:
    case Op::SumRows:
    case Op::TakeAlong:  // not to the ids
      return src == 0;
    case Op::TopK:  // ids: piecewise constant in the input, no gradient through the choice
      return false;
    default:  // ops without a rule: a path through them is refused in build_backward
      return node->src[size_t(src)] != nullptr;
  }
}

GradRule rule_of(Op op) {
  if (GradRule r = arith_rule(op)) return r;
  if (GradRule r = view_rule(op)) return r;
  if (GradRule r = composed_rule(op)) return r;
  if (GradRule r = routing_rule(op)) return r;
  return attention_rule(op);
}

namespace {

// Marks, in forward order, every node that depends on a parameter through sources its
// gradient flows to.
void mark_needs(GradContext& c, const std::vector<Tensor*>& forward) {
  for (Tensor* node : forward) {
    for (int i = 0; i < kMaxSrc; ++i) {
      if (node->src[size_t(i)] && grad_flows_to(node, i) && c.needs(node->src[size_t(i)])) {
        c.set_needs(node);
      }
    }
  }
}

std::string node_label(const Tensor* t) {
  return std::string(op_name(t->op)) + (t->name.empty() ? "" : " '" + t->name + "'");
}

}  // namespace

const Tensor* first_without_gradient(Graph& g, Tensor* out, std::span<Tensor* const> params) {
  g.expand(out);
  GradContext c(g);
  for (Tensor* p : params) c.set_needs(p);
  const std::vector<Tensor*> forward = g.nodes();
  mark_needs(c, forward);
  for (Tensor* node : forward) {
    if (c.needs(node) && node->op != Op::None && rule_of(node->op) == nullptr) return node;
  }
  return nullptr;
}

Result<Gradients> build_backward(Graph& g, Tensor* out, Tensor* seed,
                                 std::span<Tensor* const> params) {
  if (seed->type != DType::F32 || !seed->same_shape(*out)) {
    return Status::error("backward: the seed must be F32 and of the output's shape");
  }
  g.expand(out);
  GradContext c(g);
  for (Tensor* p : params) c.set_needs(p);
  // Forward order: a node needs a gradient when a source it passes gradients to does.
  const std::vector<Tensor*> forward = g.nodes();
  mark_needs(c, forward);
  if (!c.needs(out)) return Status::error("backward: the output depends on no parameter");
  c.accumulate(out, seed);
  // Reverse order: every consumer of a node comes after it, so its gradient is complete.
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    Tensor* node = *it;
    Tensor* d = c.grad(node);
    if (d == nullptr || !c.needs(node)) continue;
    const GradRule rule = rule_of(node->op);
    if (rule == nullptr) {
      return Status::error("backward: no gradient for " + node_label(node) +
                                      " on the path from a parameter to the loss");
    }
    TESSERA_RETURN_IF_ERROR(rule(c, node, d));
  }
  Gradients out_grads;
  for (Tensor* p : params) {
    Tensor* d = c.grad(p);
    // A view (a reshape of d, a part of a packed result) is copied: the allocator keeps
    // outputs alive for the whole compute, not the memory a view points into.
    if (d != nullptr && d->view_src != nullptr) d = ops::cont(g, d);
    if (d != nullptr) {
      d->flags |= kFlagOutput;
      g.expand(d);
    }
    out_grads.params.push_back(p);
    out_grads.grads.push_back(d);
  }
  return out_grads;
}

}  // namespace tessera::train
