// Tensor arenas and compute graphs. A graph is built once for a shape (the builder
// functions in core/ops.h add nodes), planned by the graph allocator, and computed
// many times by a backend with new inputs.
#pragma once

#include <deque>
#include <vector>

#include "core/tensor.h"

namespace tessera {

/// Owns tensors; pointers stay valid for the arena's lifetime.
class TensorArena {
 public:
  TensorArena() = default;
  TensorArena(const TensorArena&) = delete;
  TensorArena& operator=(const TensorArena&) = delete;

  /// A new dense tensor with no data yet. Unused trailing dims are 1.
  Tensor* new_tensor(DType type, const Shape& ne, std::string name = {});
  size_t size() const { return tensors_.size(); }

 private:
  std::deque<Tensor> tensors_;
};

class Graph {
 public:
  TensorArena& arena() { return arena_; }

  /// Adds `out` and everything it depends on to the node list, in dependency order.
  void expand(Tensor* out);

  /// Appends a node (a leaf) as it is, without walking its sources: for graphs made of
  /// the nodes of another one, already in dependency order (the scheduler's splits).
  void add_node(Tensor* t) { nodes_.push_back(t); }
  void add_leaf(Tensor* t) { leafs_.push_back(t); }

  const std::vector<Tensor*>& nodes() const { return nodes_; }  // tensors computed here
  const std::vector<Tensor*>& leafs() const { return leafs_; }  // inputs, weights, caches

 private:
  void visit(Tensor* t);
  TensorArena arena_;
  std::vector<Tensor*> nodes_;
  std::vector<Tensor*> leafs_;
  std::vector<const Tensor*> visited_;
};

}  // namespace tessera
