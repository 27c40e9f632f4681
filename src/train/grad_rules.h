// What a gradient rule sees: the graph being extended, which tensors need a gradient,
// and where to add a contribution. Internal to src/train.
#pragma once

#include <unordered_map>
#include <unordered_set>

#include "core/graph.h"
#include "tessera/status.h"

namespace tessera::train {

class GradContext {
 public:
  explicit GradContext(Graph& g) : g_(g) {}
  Graph& graph() { return g_; }

  /// Marks t as needing a gradient (a parameter, or a node one depends on).
  void set_needs(const Tensor* t) { needs_.insert(t); }
  bool needs(const Tensor* t) const { return t != nullptr && needs_.count(t) > 0; }

  /// The gradient accumulated for t so far; null when none.
  Tensor* grad(const Tensor* t) const;
  /// Adds d (F32, t's shape, contiguous) to t's gradient; nothing when t needs none.
  void accumulate(const Tensor* t, Tensor* d);
  /// Adds d into the window (d's extents, byte strides nb, byte offset) of t's gradient,
  /// t's gradient being laid out densely in t's shape (the gradient of a view of t).
  void accumulate_window(const Tensor* t, Tensor* d, const Strides& nb, size_t offset);

 private:
  Graph& g_;
  std::unordered_set<const Tensor*> needs_;
  std::unordered_map<const Tensor*, Tensor*> grads_;
};

/// Adds the contributions of node's gradient d to its sources' gradients.
using GradRule = Status (*)(GradContext& c, Tensor* node, Tensor* d);

/// The sources of node through which a gradient flows (e.g. not ids, masks, positions).
bool grad_flows_to(const Tensor* node, int src);

/// The rule of each op family; null for ops without one.
GradRule arith_rule(Op op);      // add, mul, scale, mul_mat, rms_norm, rope, soft_max, silu
GradRule view_rule(Op op);       // view, reshape, permute, transpose, cont, concat, get_rows
GradRule attention_rule(Op op);  // attention, cross_entropy
GradRule composed_rule(Op op);   // norm, gelu, relu_sqr, softcap (of forward ops)
GradRule routing_rule(Op op);    // sigmoid, div, sum_rows, take_along, mul_mat_id

/// The gradient rule of op; null when it has none.
GradRule rule_of(Op op);

/// t as a dense F32 tensor (a copy when it is a strided view).
Tensor* dense(Graph& g, Tensor* t);

}  // namespace tessera::train
