#include "core/graph.h"

#include <algorithm>

#include "core/check.h"

namespace tessera {

Tensor* TensorArena::new_tensor(DType type, const Shape& ne, std::string name) {
  for (int64_t n : ne) TESSERA_CHECK(n >= 0);
  TESSERA_CHECK(ne[0] % dtype_traits(type).block_size == 0);
  Tensor& t = tensors_.emplace_back();
  t.type = type;
  t.ne = ne;
  t.nb = contiguous_strides(type, ne);
  t.name = std::move(name);
  return &t;
}

void Graph::visit(Tensor* t) {
  // Graphs are a few thousand nodes at most; a sorted vector keeps this simple.
  auto it = std::lower_bound(visited_.begin(), visited_.end(), t);
  if (it != visited_.end() && *it == t) return;
  visited_.insert(it, t);
  for (Tensor* s : t->src) {
    if (s) visit(s);
  }
  if (t->view_src) visit(t->view_src);
  if (t->op == Op::None) {
    leafs_.push_back(t);
  } else {
    nodes_.push_back(t);
  }
}

void Graph::expand(Tensor* out) {
  TESSERA_CHECK(out != nullptr);
  visit(out);
}

}  // namespace tessera
