// The backward graph of a forward graph: reverse-mode automatic differentiation over the
// same op set, built as more nodes of the same Graph, so that the graph allocator plans
// forward and backward together and the same backend computes both. Each op's gradient
// rule lives with its family (grad_arith.cpp, grad_views.cpp, grad_attention.cpp).
#pragma once

#include <span>
#include <vector>

#include "core/graph.h"
#include "tessera/status.h"

namespace tessera::train {

/// The gradient of each parameter asked for, in the same order.
struct Gradients {
  std::vector<Tensor*> params;
  std::vector<Tensor*> grads;  // F32, the parameter's shape, contiguous; null where
                               // `out` does not depend on the parameter
};

/// The first node, in forward order, that depends on a parameter in `params` and whose op
/// has no gradient rule (out and its sources expanded into g first); null when there is
/// none. build_backward refuses such a node when it lies on the path to `out`.
const Tensor* first_without_gradient(Graph& g, Tensor* out, std::span<Tensor* const> params);

/// Adds to g the nodes that compute d out / d p for each p in `params`, seeded with
/// `seed` (d out: F32, out's shape; e.g. an input holding 1 for a scalar loss). The
/// gradients are flagged as outputs and expanded into g. Errors: an op on the path from
/// a parameter to `out` that has no gradient rule (naming the op and the node), or a
/// layout a rule does not handle.
Result<Gradients> build_backward(Graph& g, Tensor* out, Tensor* seed,
                                 std::span<Tensor* const> params);

}  // namespace tessera::train
